// SPDX-License-Identifier: MIT
// Private to the `loopcanary export` implementation (export*.cpp): the writer interface the three
// formats implement, and what they share: frame labels for stacks, JSON string output, and the
// placement of blocks on per-device, per-loop tracks in time (docs/tool.md, "Exports").
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "model.hpp"

namespace loopcanary::tool::exporting {

/// One export format. add() is called once per kept block, in input order; finish() once at
/// the end, with the reading summary. A writer streams what it can and keeps bounded state.
class Writer {
 public:
  virtual ~Writer() = default;
  virtual void add(const Block& block) = 0;
  /// Called once per kept health record, in input order (formats without health charts ignore
  /// them).
  virtual void add_health(const HealthLog& record) { static_cast<void>(record); }
  /// Called once per kept deadline-miss record (its samples are the evidence of the dispatch
  /// that ran at the due time), in input order (formats that show blocks only ignore them).
  virtual void add_deadline_miss(const LogRecord& record) { static_cast<void>(record); }
  virtual void finish(const ReadStats& read, const BlockStats& blocks) = 0;
  /// One line for the summary on the error stream: what the export holds and what it left out.
  virtual std::string summary() const = 0;
};

/// HTML page bounds: the table and the timeline hold the kMaxHtmlBlocks longest blocks; flame
/// graphs are drawn for the kMaxFlameGraphs culprits with the most samples, each without its
/// nodes under 1/kMinFlameNodeShare of the graph's samples. The page says what it left out.
constexpr std::size_t kMaxHtmlBlocks = 2000;
constexpr std::size_t kMaxFlameGraphs = 20;
constexpr std::uint64_t kMinFlameNodeShare = 1000;
/// HTML health charts: at most this many points per loop (the latest); the page says how many
/// it left out.
constexpr std::size_t kMaxHtmlHealthPoints = 5000;

std::unique_ptr<Writer> make_folded_writer(std::ostream& out);
std::unique_ptr<Writer> make_chrome_writer(std::ostream& out);
std::unique_ptr<Writer> make_html_writer(std::ostream& out);

/// A frame's label for a stack line: Frame::label() with ';' and control characters (newline
/// included) replaced by '_', and "?" for an empty label. Never contains ';' or a newline.
std::string stack_label(const Frame& frame);
/// The labels (stack_label) of a sample's frames, root first (the record's frames reversed).
/// A sample without frames gives the single label "[no frames]".
void root_first_labels(const Sample& sample, std::vector<std::string>& out);

/// A number of µs for JSON: integer when whole, else up to 3 decimals (no exponent).
std::string format_us(double us);

/// Where a block sits in time, in µs.
struct Placement {
  std::uint32_t process = 0;  ///< 1.. per (qualifier, log source), in order of first sight
  std::uint32_t track = 0;    ///< 1.. per loop (loop_index, loop) within the process
  double start_us = 0;        ///< start, µs: since the Unix epoch when wall_clock, else device ticks → µs
  double duration_us = 0;     ///< the record's duration_us
  bool wall_clock = false;    ///< start_us is anchored on the records' wall time
  double moved_us = 0;  ///< how far the start was moved later so as not to overlap the previous block of its track
};

/// Assigns processes and tracks and places blocks in time, with memory bounded by the number of
/// tracks. Time: the records' ticks, unwrapped (a 32-bit tick counter wraps), give exact
/// distances between blocks of one log; when records carry a wall time of a real clock
/// (LogRecord::wall_ms with a clock other than "other"), the ticks are anchored on it (start =
/// wall time − duration), re-anchored when the two disagree by more than 1 s (a restart, a
/// clock step). Without wall time, start_us is the device's tick time in µs. A block that would
/// overlap the previous one of its track is moved after it (moved_us says by how much).
class Timeline {
 public:
  struct Process {
    std::string name;  ///< qualifier, or "(no qualifier)", plus " · <log file name>"
    std::string qualifier;
    std::string source;
  };
  struct Track {
    std::uint32_t process = 0;
    std::string loop;
    std::uint64_t loop_index = 0;
  };

  /// Places a block. `new_process` / `new_track` tell the caller to announce them (metadata).
  Placement place(const Block& block, bool& new_process, bool& new_track);
  const Process& process(std::uint32_t id) const { return processes_.at(id - 1); }
  const Track& track(std::uint32_t id) const { return tracks_.at(id - 1); }
  std::size_t processes() const noexcept { return processes_.size(); }
  std::size_t tracks() const noexcept { return tracks_.size(); }

 private:
  struct ProcessClock {
    bool started = false;
    std::uint64_t last_raw = 0;  // the previous block's raw start
    std::int64_t ticks = 0;      // unwrapped ticks of last_raw
    bool anchored = false;
    double offset_us = 0;  // wall µs − tick µs
  };
  std::vector<Process> processes_;
  std::vector<ProcessClock> clocks_;
  std::vector<Track> tracks_;
  std::vector<double> track_end_us_;
  std::map<std::pair<std::string, std::string>, std::uint32_t> process_ids_;
  std::map<std::tuple<std::uint32_t, std::uint64_t, std::string>, std::uint32_t> track_ids_;
};

/// Names of a block's flags ("hung", "unwatched", "end_estimated", "running_at_stop"), in that
/// order.
std::vector<std::string> flag_names(const LogRecord& record);

}  // namespace loopcanary::tool::exporting
