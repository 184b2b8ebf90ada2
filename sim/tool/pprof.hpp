// SPDX-License-Identifier: MIT
// `loopcanary export --format pprof` (docs/tool.md, "--format pprof"): the kept samples of the
// blocks and deadline misses as a pprof profile (profile.proto of github.com/google/pprof, protobuf wire format) in
// gzip framing, for continuous-profiling back ends (Grafana Pyroscope, Parca) and `go tool
// pprof`. Written with the standard library: the protobuf encoding by hand, the gzip member with
// stored (uncompressed) deflate blocks. Private to the tool; host code, one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>

#include "export.hpp"

namespace loopcanary::tool::exporting {

/// The sample types of the profile, in this order: `samples` (unit `count`): kept samples with
/// the stack; `blocked` (unit `nanoseconds`): the record's duration_us (a block's duration, a
/// deadline miss's lateness) shared among its kept samples (each stack gets duration × its
/// samples / the record's kept samples; the rounding remainder goes to the record's last stack,
/// so a record's stacks add up to its duration exactly). A block contributes its representative
/// report (Block::record); a deadline miss its own record, whose samples are those of the
/// dispatch that ran at the due time (phase label `deadline_miss`: leave it out to count each
/// dispatch once).
inline constexpr const char* kPprofSampleTypes[2][2] = {{"samples", "count"}, {"blocked", "nanoseconds"}};
/// The label keys every sample carries (string labels): the record's loop, event, cause,
/// qualifier (firmware version or unit), phase (in_progress, hang, final, deadline_miss) and block
/// ID (Block::id; a deadline miss: block_id() of the late dispatch). An empty name is written
/// `""` (pprof readers drop a label whose value is the empty string).
inline constexpr const char* kPprofLabels[6] = {"loop", "event", "cause", "qualifier", "phase", "block_id"};
/// The label keys the samples of a record that waited on an object also carry (string labels):
/// `wait`, the main wait object's description (wait_text(), as every form names it), and
/// `holder`, its holder as holder_text() names it ("journal (tid 4242)"), when it has one.
inline constexpr const char* kPprofWaitLabels[2] = {"wait", "holder"};

/// Appends protobuf wire-format pieces to `out`: a varint, a field key (field number and wire
/// type), a varint field, a length-delimited field (bytes as given).
void put_varint(std::string& out, std::uint64_t value);
void put_key(std::string& out, std::uint32_t field, std::uint32_t wire_type);
void put_varint_field(std::string& out, std::uint32_t field, std::uint64_t value);
void put_bytes_field(std::string& out, std::uint32_t field, const std::string& bytes);

/// A gzip member (RFC 1952) of stored deflate blocks (RFC 1951, BTYPE 00) around what is written
/// to it, streamed: at most one block (64 KiB − 1) is buffered. finish() writes the last block
/// and the trailer (CRC-32 and size); nothing may be written after it. Errors are the stream's.
class StoredGzip {
 public:
  explicit StoredGzip(std::ostream& out);
  void write(const char* data, std::size_t size);
  void write(const std::string& bytes) { write(bytes.data(), bytes.size()); }
  void finish();
  std::uint64_t bytes_in() const noexcept { return size_; }

 private:
  void block(bool final);
  std::ostream& out_;
  std::string buffer_;
  std::uint32_t crc_ = 0;
  std::uint64_t size_ = 0;
};

/// The pprof writer (one per export). Memory: one entry per distinct string, function, location
/// and mapping; samples are written as they come.
std::unique_ptr<Writer> make_pprof_writer(std::ostream& out);

}  // namespace loopcanary::tool::exporting
