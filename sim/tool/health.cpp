// SPDX-License-Identifier: MIT
// Health records as time series (health_series.hpp) and `loopcanary health` (commands.hpp,
// docs/tool.md).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ostream>

#include "commands.hpp"
#include "health_series.hpp"

namespace loopcanary::tool {

std::string rate_text(std::uint64_t rate_mhz) {
  return std::to_string(rate_mhz / 1000) + "." + std::to_string(rate_mhz / 100 % 10);
}

std::string permille_text(std::uint64_t permille) {
  return std::to_string(permille / 10) + "." + std::to_string(permille % 10);
}

void HealthCollector::add(const HealthLog& r) {
  ++records_;
  auto [it, inserted] = index_.try_emplace({r.source, r.qualifier, r.loop, r.loop_index}, series_.size());
  if (inserted) {
    series_.emplace_back();
    HealthSeries& fresh = series_.back();
    fresh.source = r.source;
    fresh.qualifier = r.qualifier;
    fresh.loop = r.loop;
    fresh.loop_index = r.loop_index;
  }
  HealthSeries& s = series_[it->second];
  const double window_s = static_cast<double>(r.window_us) / 1e6;
  double time_s = 0;
  if (!s.started) {
    time_s = r.tick_hz == 0 ? window_s : static_cast<double>(r.end) / static_cast<double>(r.tick_hz);
  } else {
    const double previous = s.points.empty() ? 0.0 : s.points.back().time_s;
    if (r.number <= s.last_number || r.tick_hz == 0) {
      time_s = previous + window_s;  // a restarted writer, or no tick rate: the window itself
    } else {
      const auto delta = static_cast<std::uint32_t>(r.end - s.last_end);  // the core's 32-bit ticks
      time_s = previous + static_cast<double>(delta) / static_cast<double>(r.tick_hz);
      s.numbering_gaps += r.number - s.last_number - 1;
    }
  }
  s.started = true;
  s.last_end = r.end;
  s.last_number = r.number;

  HealthPoint p;
  p.time_s = time_s;
  p.wall_ms = r.wall_ms;
  p.number = r.number;
  p.window_us = r.window_us;
  p.dispatches = r.dispatches;
  p.rate_mhz = r.rate_mhz;
  p.load_permille = r.load_permille;
  p.idle_permille = r.idle_permille;
  p.blocks = r.blocks;
  p.hangs = r.hangs;
  p.health_dropped = r.health_dropped;
  for (const EventHealth& e : r.events) {
    auto name = std::find(s.events.begin(), s.events.end(), e.event);
    if (name == s.events.end()) name = s.events.insert(s.events.end(), e.event);
    HealthEventPoint ep;
    ep.event = static_cast<std::uint32_t>(name - s.events.begin());
    ep.dispatches = e.dispatches;
    ep.rate_mhz = e.rate_mhz;
    ep.p50_us = e.p50_us;
    ep.p95_us = e.p95_us;
    ep.p99_us = e.p99_us;
    ep.max_latency_us = e.max_latency_us;
    ep.deadline_misses = e.deadline_misses;
    ep.missed_periods = e.missed_periods;
    ep.period_us = e.period_us;
    ep.deadline_us = e.deadline_us;
    p.events.push_back(ep);
  }
  if (s.points.size() >= kMaxHealthPoints) {
    s.points.pop_front();
    ++s.dropped;
  }
  s.points.push_back(std::move(p));
}

namespace {

std::string seconds(double s) {
  char text[48];
  std::snprintf(text, sizeof text, "%.6f", s);
  return text;
}

bool event_shown(const Filter& filter, const std::string& name) {
  return filter.events.empty() || std::find(filter.events.begin(), filter.events.end(), name) != filter.events.end();
}

void print_text(std::ostream& out, const HealthCollector& health, const Filter& filter) {
  bool first = true;
  for (const HealthSeries& s : health.series()) {
    out << (first ? "" : "\n") << "loop " << s.loop << " (index " << s.loop_index << "), qualifier "
        << (s.qualifier.empty() ? std::string("\"\"") : s.qualifier) << ", " << s.source << ": " << s.points.size()
        << (s.points.size() == 1 ? " health record" : " health records");
    if (s.dropped > 0) out << " (the latest; " << s.dropped << " older not kept)";
    if (s.numbering_gaps > 0) out << ", " << s.numbering_gaps << " missing by number (dropped on the device)";
    out << '\n';
    first = false;
    char line[160];
    std::snprintf(line, sizeof line, "  %14s %10s %10s %6s %6s  %s\n", "time s", "dispatches", "rate /s", "load %",
                  "idle %", "events: rate /s, latency p50/p95/p99 ms, deadline misses, missed periods");
    out << line;
    for (const HealthPoint& p : s.points) {
      std::snprintf(line, sizeof line, "  %14s %10" PRIu64 " %10s %6s %6s", seconds(p.time_s).c_str(), p.dispatches,
                    rate_text(p.rate_mhz).c_str(), permille_text(p.load_permille).c_str(),
                    p.idle_permille ? permille_text(*p.idle_permille).c_str() : "n/a");
      out << line;
      bool first_event = true;
      for (const HealthEventPoint& e : p.events) {
        const std::string& name = s.events[e.event];
        if (!event_shown(filter, name)) continue;
        out << (first_event ? "  " : "; ") << name << ' ' << rate_text(e.rate_mhz) << " /s, " << ms_text(e.p50_us) << '/'
            << ms_text(e.p95_us) << '/' << ms_text(e.p99_us) << " ms, " << e.deadline_misses
            << (e.deadline_misses == 1 ? " miss, " : " misses, ") << e.missed_periods << " missed";
        first_event = false;
      }
      out << '\n';
    }
  }
}

void print_json(std::ostream& out, const HealthCollector& health, const Filter& filter, const ReadStats& stats,
                std::uint64_t filtered) {
  out << "{\"format_version\":" << kFormatVersion << ",\"series\":[";
  bool first = true;
  for (const HealthSeries& s : health.series()) {
    out << (first ? "" : ",") << "{\"source\":" << json_string(s.source) << ",\"qualifier\":" << json_string(s.qualifier)
        << ",\"loop\":" << json_string(s.loop) << ",\"loop_index\":" << s.loop_index
        << ",\"records\":" << s.points.size() << ",\"dropped\":" << s.dropped << ",\"numbering_gaps\":" << s.numbering_gaps
        << ",\"points\":[";
    first = false;
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      const HealthPoint& p = s.points[i];
      out << (i == 0 ? "" : ",") << "{\"time_s\":" << seconds(p.time_s) << ",\"number\":" << p.number
          << ",\"window_us\":" << p.window_us << ",\"dispatches\":" << p.dispatches << ",\"rate_mhz\":" << p.rate_mhz
          << ",\"load_permille\":" << p.load_permille << ",\"idle_permille\":"
          << (p.idle_permille ? std::to_string(*p.idle_permille) : std::string("null")) << ",\"blocks\":" << p.blocks
          << ",\"hangs\":" << p.hangs << ",\"written\":"
          << (p.wall_ms ? json_string(format_utc_time(*p.wall_ms)) : std::string("null")) << ",\"events\":[";
      bool first_event = true;
      for (const HealthEventPoint& e : p.events) {
        const std::string& name = s.events[e.event];
        if (!event_shown(filter, name)) continue;
        out << (first_event ? "" : ",") << "{\"event\":" << json_string(name) << ",\"dispatches\":" << e.dispatches
            << ",\"rate_mhz\":" << e.rate_mhz << ",\"p50_us\":" << e.p50_us << ",\"p95_us\":" << e.p95_us
            << ",\"p99_us\":" << e.p99_us << ",\"max_latency_us\":" << e.max_latency_us
            << ",\"deadline_misses\":" << e.deadline_misses << ",\"missed_periods\":" << e.missed_periods << '}';
        first_event = false;
      }
      out << "]}";
    }
    out << "]}";
  }
  out << "],\"summary\":{\"files\":" << stats.files << ",\"records\":" << stats.records
      << ",\"health_records\":" << stats.health_records << ",\"shown\":" << health.records()
      << ",\"filtered\":" << filtered << ",\"warnings\":" << stats.warnings_total() << "}}\n";
}

}  // namespace

int run_health(const Options& options, std::ostream& out, std::ostream& err) {
  Reader reader(err);
  HealthCollector health;
  std::uint64_t filtered = 0;
  reader.set_health_callback([&](HealthLog& record) {
    if (!options.filter.accepts(record)) {
      ++filtered;
      return;
    }
    health.add(record);
  });
  for (const std::string& path : options.paths) reader.read_path(path, {});
  if (options.format == "json") {
    print_json(out, health, options.filter, reader.stats(), filtered);
  } else {
    print_text(out, health, options.filter);
  }
  print_summary(err, reader.stats());
  err << "health: " << health.records() << " of " << reader.stats().health_records << " health records shown ("
      << health.series().size() << (health.series().size() == 1 ? " loop" : " loops");
  if (filtered > 0) err << ", " << filtered << " filtered out";
  err << ")\n";
  if (reader.stats().health_records == 0) {
    err << "loopcanary: health: no health record in the input\n";
    return 1;
  }
  return 0;
}

}  // namespace loopcanary::tool
