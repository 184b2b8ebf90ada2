// SPDX-License-Identifier: MIT
// `loopcanary export --format chrome`: Trace Event Format JSON (the "JSON Object Format" with a
// traceEvents array), streamed block by block. A process per (qualifier, log), a thread per loop,
// each block a complete event ("ph":"X") and its kept samples as complete events nested under it:
// one slice per frame, root at the top, consecutive samples sharing frames merged into one slice.
#include <algorithm>
#include <ostream>
#include <string>

#include "export.hpp"

namespace loopcanary::tool::exporting {
namespace {

struct Slice {
  std::string name;
  double begin_us = 0;  // from the block's start
  double end_us = 0;
  std::size_t depth = 0;
};

// The kept samples of a record as nested slices (see the file comment and docs/tool.md): a
// sample covers the time from the previous kept sample to its own; the first one covers one
// sample interval (the smallest gap between kept samples) before it, or from the block's start
// when it is alone. Everything is clamped to [0, duration].
void sample_slices(const LogRecord& r, std::vector<Slice>& slices, std::vector<std::string>& labels) {
  slices.clear();
  const auto& s = r.stacks;
  if (s.empty()) return;
  const double duration = static_cast<double>(r.duration_us);
  double step = 0;
  for (std::size_t i = 1; i < s.size(); ++i) {
    if (s[i].at_us > s[i - 1].at_us) {
      const double gap = static_cast<double>(s[i].at_us - s[i - 1].at_us);
      if (step == 0 || gap < step) step = gap;
    }
  }
  struct Open {
    std::string name;
    double begin;
  };
  std::vector<Open> open;
  double last_end = 0;
  const auto close_to = [&](std::size_t keep, double at) {
    while (open.size() > keep) {
      if (at > open.back().begin) slices.push_back(Slice{open.back().name, open.back().begin, at, open.size() - 1});
      open.pop_back();
    }
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    const double at = std::min(static_cast<double>(s[i].at_us), duration);
    double begin = 0;
    if (i == 0) {
      begin = step == 0 ? 0.0 : std::max(0.0, at - step);
    } else {
      begin = std::min(static_cast<double>(s[i - 1].at_us), duration);
    }
    if (at <= begin) continue;
    if (begin != last_end) close_to(0, last_end);
    root_first_labels(s[i], labels);
    std::size_t common = 0;
    while (common < open.size() && common < labels.size() && open[common].name == labels[common]) ++common;
    close_to(common, begin);
    for (std::size_t d = common; d < labels.size(); ++d) open.push_back(Open{labels[d], begin});
    last_end = at;
  }
  close_to(0, last_end);
  std::sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
    return a.begin_us != b.begin_us ? a.begin_us < b.begin_us : a.depth < b.depth;
  });
}

class ChromeWriter final : public Writer {
 public:
  explicit ChromeWriter(std::ostream& out) : out_(out) { out_ << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":["; }

  void add(const Block& block) override {
    const LogRecord& r = block.record;
    bool new_process = false;
    bool new_track = false;
    const Placement p = timeline_.place(block, new_process, new_track);
    if (new_process) {
      begin_event();
      out_ << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << p.process << ",\"tid\":0,\"args\":{\"name\":";
      write_json_string(out_, timeline_.process(p.process).name);
      out_ << "}}";
    }
    if (new_track) {
      begin_event();
      out_ << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << p.process << ",\"tid\":" << p.track
           << ",\"args\":{\"name\":";
      write_json_string(out_, r.loop);
      out_ << "}}";
      begin_event();
      out_ << "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":" << p.process << ",\"tid\":" << p.track
           << ",\"args\":{\"sort_index\":" << r.loop_index << "}}";
    }

    begin_event();
    out_ << "{\"ph\":\"X\",\"cat\":\"block\",\"name\":";
    write_json_string(out_, r.event.empty() ? std::string("?") : r.event);
    out_ << ",\"pid\":" << p.process << ",\"tid\":" << p.track << ",\"ts\":" << format_us(p.start_us)
         << ",\"dur\":" << format_us(p.duration_us);
    if (block.hung) out_ << ",\"cname\":\"terrible\"";
    out_ << ",\"args\":{\"id\":";
    write_json_string(out_, block.id);
    out_ << ",\"event\":";
    write_json_string(out_, r.event);
    out_ << ",\"loop\":";
    write_json_string(out_, r.loop);
    out_ << ",\"qualifier\":";
    write_json_string(out_, r.qualifier);
    out_ << ",\"dispatch\":" << r.dispatch << ",\"phase\":\"" << to_string(r.phase) << "\",\"cause\":\""
         << to_string(r.cause) << "\",\"reports\":" << block.reports
         << ",\"complete\":" << (block.has_final ? "true" : "false") << ",\"flags\":[";
    const auto flags = flag_names(r);
    for (std::size_t i = 0; i < flags.size(); ++i) out_ << (i ? "," : "") << '"' << flags[i] << '"';
    out_ << "],\"culprit\":";
    write_json_string(out_, block.culprit.label);
    out_ << ",\"culprit_share_pct\":"
         << format_us(static_cast<double>(block.culprit.share_permille()) / 10.0)
         << ",\"duration_ms\":" << format_us(static_cast<double>(r.duration_us) / 1000.0)
         << ",\"threshold_ms\":" << format_us(static_cast<double>(r.threshold_us) / 1000.0)
         << ",\"samples\":{\"taken\":" << r.samples_taken << ",\"kept\":" << r.samples_kept
         << ",\"overwritten\":" << r.samples_overwritten << ",\"missed\":" << r.samples_missed << "}";
    if (r.wall_ms) {
      out_ << ",\"written\":";
      write_json_string(out_, format_utc_time(*r.wall_ms));
    }
    if (p.moved_us > 0) out_ << ",\"moved_us\":" << format_us(p.moved_us);
    out_ << ",\"file\":";
    write_json_string(out_, block.first_file);
    out_ << ",\"line\":" << block.first_line << "}}";
    ++blocks_;

    sample_slices(r, slices_, labels_);
    for (const Slice& s : slices_) {
      begin_event();
      out_ << "{\"ph\":\"X\",\"cat\":\"sample\",\"name\":";
      write_json_string(out_, s.name);
      out_ << ",\"pid\":" << p.process << ",\"tid\":" << p.track << ",\"ts\":" << format_us(p.start_us + s.begin_us)
           << ",\"dur\":" << format_us(s.end_us - s.begin_us) << "}";
    }
    slice_events_ += slices_.size();
    samples_ += r.stacks.size();
  }

  void finish(const ReadStats& read, const BlockStats& blocks) override {
    out_ << "\n],\"otherData\":{\"exporter\":\"loopcanary export --format chrome\",\"records\":" << read.records
         << ",\"warnings\":" << read.warnings_total() << ",\"blocks\":" << blocks.kept
         << ",\"filtered\":" << blocks.filtered << ",\"ignored\":" << blocks.ignored << "}}\n";
  }

  std::string summary() const override {
    return std::to_string(blocks_) + " blocks on " + std::to_string(timeline_.tracks()) + " tracks of " +
           std::to_string(timeline_.processes()) + " processes, " + std::to_string(samples_) + " samples as " +
           std::to_string(slice_events_) + " slices";
  }

 private:
  void begin_event() {
    out_ << (first_ ? "\n" : ",\n");
    first_ = false;
  }

  std::ostream& out_;
  Timeline timeline_;
  bool first_ = true;
  std::vector<Slice> slices_;
  std::vector<std::string> labels_;
  std::uint64_t blocks_ = 0;
  std::uint64_t samples_ = 0;
  std::uint64_t slice_events_ = 0;
};

}  // namespace

std::unique_ptr<Writer> make_chrome_writer(std::ostream& out) { return std::make_unique<ChromeWriter>(out); }

}  // namespace loopcanary::tool::exporting
