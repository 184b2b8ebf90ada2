// SPDX-License-Identifier: MIT
// `loopcanary export`: reads the blocks like `report` and hands them to one format writer
// (export_folded.cpp, export_chrome.cpp, export_html.cpp, pprof.cpp); what the formats share.
#include "export.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <ostream>

#include "commands.hpp"
#include "pprof.hpp"

namespace loopcanary::tool {
namespace exporting {

std::string stack_label(const Frame& frame) {
  std::string label = frame.label();
  if (label.empty()) return "?";
  for (char& c : label) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == ';' || byte < 0x20 || byte == 0x7f) c = '_';
  }
  return label;
}

void root_first_labels(const Sample& sample, std::vector<std::string>& out) {
  out.clear();
  if (sample.frames.empty()) {
    out.emplace_back("[no frames]");
    return;
  }
  for (auto it = sample.frames.rbegin(); it != sample.frames.rend(); ++it) out.push_back(stack_label(*it));
}

std::string format_us(double us) {
  char text[64];
  if (!std::isfinite(us)) return "0";
  if (us == std::floor(us) && std::fabs(us) < 9.0e15) {
    std::snprintf(text, sizeof text, "%.0f", us);
    return text;
  }
  std::snprintf(text, sizeof text, "%.3f", us);
  std::string s = text;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

std::vector<std::string> flag_names(const LogRecord& record) {
  std::vector<std::string> names;
  if (record.hung) names.emplace_back("hung");
  if (record.unwatched) names.emplace_back("unwatched");
  if (record.end_estimated) names.emplace_back("end_estimated");
  if (record.running_at_stop) names.emplace_back("running_at_stop");
  return names;
}

namespace {

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

constexpr double kReanchorUs = 1e6;  // wall and tick time disagreeing by more: re-anchor

}  // namespace

Placement Timeline::place(const Block& block, bool& new_process, bool& new_track) {
  const LogRecord& r = block.record;
  Placement p;
  new_process = false;
  new_track = false;

  auto [pit, inserted] = process_ids_.try_emplace({r.qualifier, r.source}, 0);
  if (inserted) {
    pit->second = static_cast<std::uint32_t>(processes_.size() + 1);
    Process proc;
    proc.qualifier = r.qualifier;
    proc.source = r.source;
    proc.name = (r.qualifier.empty() ? std::string("(no qualifier)") : r.qualifier) + " \u00b7 " + base_name(r.source);
    processes_.push_back(std::move(proc));
    clocks_.emplace_back();
    new_process = true;
  }
  p.process = pit->second;

  auto [tit, track_inserted] = track_ids_.try_emplace({p.process, r.loop_index, r.loop}, 0);
  if (track_inserted) {
    tit->second = static_cast<std::uint32_t>(tracks_.size() + 1);
    tracks_.push_back(Track{p.process, r.loop, r.loop_index});
    track_end_us_.push_back(-1e300);
    new_track = true;
  }
  p.track = tit->second;
  p.duration_us = static_cast<double>(r.duration_us);

  ProcessClock& clock = clocks_[p.process - 1];
  // Unwrap the start: a counter that fits 32 bits wraps at 2^32, a wider one at 2^64.
  if (!clock.started) {
    clock.started = true;
    clock.ticks = static_cast<std::int64_t>(r.start);
  } else if (r.start <= 0xFFFFFFFFu && clock.last_raw <= 0xFFFFFFFFu) {
    const auto delta = static_cast<std::int32_t>(static_cast<std::uint32_t>(r.start - clock.last_raw));
    clock.ticks += delta;
  } else {
    clock.ticks += static_cast<std::int64_t>(r.start - clock.last_raw);
  }
  clock.last_raw = r.start;
  const double tick_us = r.tick_hz == 0 ? track_end_us_[p.track - 1]
                                        : static_cast<double>(clock.ticks) * 1e6 / static_cast<double>(r.tick_hz);

  if (r.wall_ms && r.clock != "other") {
    const double wall_start = static_cast<double>(*r.wall_ms) * 1000.0 - p.duration_us;
    if (!clock.anchored || std::fabs(wall_start - (tick_us + clock.offset_us)) > kReanchorUs) {
      clock.offset_us = wall_start - tick_us;
      clock.anchored = true;
    }
  }
  p.wall_clock = clock.anchored;
  p.start_us = std::floor(tick_us + (clock.anchored ? clock.offset_us : 0.0));  // whole µs: slices nest exactly

  double& end = track_end_us_[p.track - 1];
  if (p.start_us < end) {
    p.moved_us = end - p.start_us;
    p.start_us = end;
  }
  end = p.start_us + p.duration_us;
  return p;
}

}  // namespace exporting

int run_export(const Options& options, std::ostream& out, std::ostream& err) {
  using Factory = std::unique_ptr<exporting::Writer> (*)(std::ostream&);
  Factory factory = nullptr;
  if (options.format == "folded") {
    factory = exporting::make_folded_writer;
  } else if (options.format == "chrome") {
    factory = exporting::make_chrome_writer;
  } else if (options.format == "html") {
    factory = exporting::make_html_writer;
  } else if (options.format == "pprof") {
    factory = exporting::make_pprof_writer;
  } else {
    err << "loopcanary: --format: export needs folded, chrome, html or pprof"
        << (options.format.empty() ? std::string() : ", not '" + options.format + "'") << "\n";
    return 2;
  }
  std::ofstream file;
  std::ostream* target = &out;
  if (!options.output.empty()) {
    file.open(options.output, std::ios::binary | std::ios::trunc);
    if (!file) {
      err << "loopcanary: -o: cannot write " << options.output << "\n";
      return 2;
    }
    target = &file;
  }
  const std::unique_ptr<exporting::Writer> writer = factory(*target);

  Reader reader(err);
  OtherRecords others;
  others.on_health = [&](const HealthLog& health) { writer->add_health(health); };
  others.on_deadline_miss = [&](const LogRecord& miss) { writer->add_deadline_miss(miss); };
  const BlockStats blocks = read_blocks(reader, options.paths, options.rules, options.filter,
                                        [&](const Block& block) { writer->add(block); }, others);
  writer->finish(reader.stats(), blocks);
  target->flush();
  print_summary(err, reader.stats(), &blocks);
  err << "export " << options.format << ": " << writer->summary() << "\n";
  if (!*target) {
    err << "loopcanary: -o: write error on "
        << (options.output.empty() ? std::string("standard output") : options.output) << "\n";
    return 1;
  }
  return reader.stats().records > 0 ? 0 : 1;
}

}  // namespace loopcanary::tool
