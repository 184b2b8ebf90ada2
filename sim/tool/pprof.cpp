// SPDX-License-Identifier: MIT
// `loopcanary export --format pprof` (pprof.hpp, docs/tool.md): profile.proto written field by
// field. Samples go out as each block arrives (a Profile's repeated fields may come in any
// order); the string table, functions, locations and mappings they refer to follow at the end.
#include "pprof.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "loopcanary/packet.hpp"

namespace loopcanary::tool::exporting {

void put_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void put_key(std::string& out, std::uint32_t field, std::uint32_t wire_type) {
  put_varint(out, (std::uint64_t{field} << 3) | wire_type);
}

void put_varint_field(std::string& out, std::uint32_t field, std::uint64_t value) {
  put_key(out, field, 0);
  put_varint(out, value);
}

void put_bytes_field(std::string& out, std::uint32_t field, const std::string& bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out += bytes;
}

namespace {

constexpr std::size_t kStoredBlockMax = 65535;  // LEN of a stored deflate block is 16 bits

void put_le32(std::ostream& out, std::uint32_t v) {
  const char bytes[4] = {static_cast<char>(v), static_cast<char>(v >> 8), static_cast<char>(v >> 16),
                         static_cast<char>(v >> 24)};
  out.write(bytes, 4);
}

}  // namespace

StoredGzip::StoredGzip(std::ostream& out) : out_(out) {
  // ID1 ID2, CM = 8 (deflate), FLG = 0, MTIME = 0 (none), XFL = 0, OS = 255 (unknown).
  const char header[10] = {'\x1f', '\x8b', 8, 0, 0, 0, 0, 0, 0, '\xff'};
  out_.write(header, sizeof header);
  buffer_.reserve(kStoredBlockMax);
}

void StoredGzip::write(const char* data, std::size_t size) {
  crc_ = loopcanary::crc32(reinterpret_cast<const std::uint8_t*>(data), size, crc_);
  size_ += size;
  while (size > 0) {
    const std::size_t n = std::min(size, kStoredBlockMax - buffer_.size());
    buffer_.append(data, n);
    data += n;
    size -= n;
    if (buffer_.size() == kStoredBlockMax) block(false);
  }
}

void StoredGzip::block(bool final) {
  // BFINAL in bit 0, BTYPE 00 in bits 1-2, the rest of the byte skipped; LEN, NLEN (LE).
  const auto len = static_cast<std::uint16_t>(buffer_.size());
  const auto nlen = static_cast<std::uint16_t>(~len);
  const char head[5] = {static_cast<char>(final ? 1 : 0), static_cast<char>(len), static_cast<char>(len >> 8),
                        static_cast<char>(nlen), static_cast<char>(nlen >> 8)};
  out_.write(head, sizeof head);
  out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  buffer_.clear();
}

void StoredGzip::finish() {
  block(true);
  put_le32(out_, crc_);
  put_le32(out_, static_cast<std::uint32_t>(size_));  // ISIZE: the size modulo 2^32
}

namespace {

// profile.proto field numbers.
enum : std::uint32_t {
  kProfileSampleType = 1, kProfileSample = 2, kProfileMapping = 3, kProfileLocation = 4, kProfileFunction = 5,
  kProfileStringTable = 6, kProfileTimeNanos = 9, kProfileDurationNanos = 10, kProfileDefaultSampleType = 14,
};

// A sample's label values (string table indices) by key: kPprofLabels, then kPprofWaitLabels; 0
// for a label the sample does not carry.
using Labels = std::array<std::uint64_t, std::size(kPprofLabels) + std::size(kPprofWaitLabels)>;

class PprofWriter final : public Writer {
 public:
  explicit PprofWriter(std::ostream& out) : gzip_(out) {
    intern("");  // string_table[0] is the empty string
    for (const char* key : kPprofLabels) label_keys_.push_back(intern(key));
    for (const char* key : kPprofWaitLabels) label_keys_.push_back(intern(key));
  }

  void add(const Block& block) override {
    if (block.record.stacks.empty() && block.record.top.empty()) {
      ++blocks_without_samples_;
      return;
    }
    ++blocks_;
    add_record(block.record, block.id);
  }

  void add_deadline_miss(const LogRecord& record) override {
    if (record.stacks.empty() && record.top.empty()) {
      ++misses_without_samples_;
      return;
    }
    ++misses_;
    add_record(record, block_id(record));
  }

 private:
  // One pprof sample per distinct stack of the record's samples (record_stacks(): every sample
  // of the dispatch, by its stack table; the phase label is the record's, the block ID `id`).
  void add_record(const LogRecord& r, const std::string& id) {
    if (!r.top_stacks) overwritten_ += r.samples_overwritten;
    if (r.wall_ms) {
      first_ms_ = std::min(first_ms_.value_or(*r.wall_ms), *r.wall_ms);
      last_ms_ = std::max(last_ms_.value_or(*r.wall_ms), *r.wall_ms);
    }
    // The block's distinct stacks (leaf first, as profile.proto wants) and their counts.
    stacks_.clear();
    std::uint64_t kept = 0;
    for (const CountedStack& s : record_stacks(r)) {
      stack_.clear();
      if (s.stack.frames.empty()) {
        stack_.push_back(no_frames_location());
      } else {
        for (const Frame& frame : s.stack.frames) stack_.push_back(location(frame));
      }
      stacks_[stack_] += s.samples;
      kept += s.samples;
    }
    // The wait labels: 0 (no label) for a record that waited on nothing, or a holder not known.
    const WaitEntry* wait = r.wait.objects.empty() ? nullptr : &r.wait.objects.front();
    const Labels labels = {intern(label_value(r.loop)), intern(label_value(r.event)), intern(to_string(r.cause)),
                           intern(label_value(r.qualifier)), intern(to_string(r.phase)), intern(id),
                           wait != nullptr ? intern(wait_text(*wait)) : 0u,
                           wait != nullptr && wait->owner ? intern(holder_text(*wait->owner)) : 0u};
    // Values are int64 in profile.proto: a duration past 2^63 ns (292 years: a damaged record)
    // is clamped there.
    constexpr std::uint64_t kMaxUs = static_cast<std::uint64_t>(INT64_MAX) / 1000;
    const std::uint64_t duration_ns = std::min(r.duration_us, kMaxUs) * 1000;
    std::uint64_t given_ns = 0;
    std::size_t left = stacks_.size();
    for (const auto& [stack, count] : stacks_) {
      // floor(duration × count / kept) without overflow; the last stack takes the remainder.
      const std::uint64_t ns = --left == 0 ? duration_ns - given_ns
                                           : duration_ns / kept * count + duration_ns % kept * count / kept;
      given_ns += ns;
      write_sample(stack, count, ns, labels);
      samples_ += count;
    }
  }

 public:
  void finish(const ReadStats&, const BlockStats&) override {
    std::string message;
    for (const auto& type : kPprofSampleTypes) {
      std::string value_type;
      put_varint_field(value_type, 1, intern(type[0]));
      put_varint_field(value_type, 2, intern(type[1]));
      put_bytes_field(message, kProfileSampleType, value_type);
    }
    for (const Mapping& m : mappings_) {
      std::string mapping;
      put_varint_field(mapping, 1, m.id);
      put_varint_field(mapping, 2, m.start);
      put_varint_field(mapping, 3, m.limit);
      put_varint_field(mapping, 5, m.filename);
      if (m.build_id != 0) put_varint_field(mapping, 6, m.build_id);
      put_varint_field(mapping, 7, 1);  // has_functions: every location names one
      if (m.has_files) put_varint_field(mapping, 8, 1);
      if (m.has_lines) put_varint_field(mapping, 9, 1);
      put_bytes_field(message, kProfileMapping, mapping);
    }
    flush_message(message);
    message += locations_;
    message += functions_;
    flush_message(message);
    for (const std::string& s : strings_) {
      put_bytes_field(message, kProfileStringTable, s);
      if (message.size() > kStoredBlockMax) flush_message(message);
    }
    if (first_ms_ && *first_ms_ >= 0) {
      put_varint_field(message, kProfileTimeNanos, static_cast<std::uint64_t>(*first_ms_) * 1'000'000u);
      put_varint_field(message, kProfileDurationNanos, static_cast<std::uint64_t>(*last_ms_ - *first_ms_) * 1'000'000u);
    }
    put_varint_field(message, kProfileDefaultSampleType, intern_known(kPprofSampleTypes[0][0]));
    flush_message(message);
    gzip_.finish();
  }

  std::string summary() const override {
    return std::to_string(samples_) + " samples of " + std::to_string(blocks_) + " blocks and " +
           std::to_string(misses_) + " deadline misses in " + std::to_string(pprof_samples_) + " pprof samples (" +
           std::to_string(functions_count_) + " functions, " + std::to_string(locations_count_) + " locations); " +
           std::to_string(blocks_without_samples_) + " blocks and " + std::to_string(misses_without_samples_) +
           " deadline misses without samples and " + std::to_string(overwritten_) +
           " samples overwritten before their report (records without a stack table) are not in it";
  }

 private:
  struct Mapping {
    std::uint64_t id = 0, start = 0, limit = 0, filename = 0, build_id = 0;
    bool has_files = false, has_lines = false;
  };

  std::uint64_t intern(const std::string& s) {
    auto [it, inserted] = string_ids_.try_emplace(s, strings_.size());
    if (inserted) strings_.push_back(s);
    return it->second;
  }
  std::uint64_t intern(const char* s) { return intern(std::string(s)); }
  // A label's value: pprof readers drop a string label whose value is "" (string_table[0]), so
  // an empty name is written as report's text prints it, "\"\"".
  static std::string label_value(const std::string& s) { return s.empty() ? std::string("\"\"") : s; }
  std::uint64_t intern_known(const char* s) const { return string_ids_.at(s); }

  std::uint64_t function(const std::string& name, const std::string& file) {
    key_ = name;
    key_.push_back('\0');
    key_ += file;
    auto [it, inserted] = function_ids_.try_emplace(key_, function_ids_.size() + 1);
    if (inserted) {
      std::string f;
      put_varint_field(f, 1, it->second);
      put_varint_field(f, 2, intern(name));
      put_varint_field(f, 3, intern(name));
      if (!file.empty()) put_varint_field(f, 4, intern(file));
      put_bytes_field(functions_, kProfileFunction, f);
      ++functions_count_;
    }
    return it->second;
  }

  std::uint64_t mapping(const Frame& frame) {
    const std::uint64_t start = frame.pc - frame.module_offset;
    key_ = frame.module;
    key_.push_back('\0');
    key_ += frame.build_id;
    key_.push_back('\0');
    key_ += std::to_string(start);
    auto [it, inserted] = mapping_ids_.try_emplace(key_, mappings_.size());
    if (inserted) {
      Mapping m;
      m.id = mappings_.size() + 1;
      m.start = start;
      m.filename = intern(frame.module);
      if (!frame.build_id.empty()) m.build_id = intern(frame.build_id);
      mappings_.push_back(m);
    }
    Mapping& m = mappings_[it->second];
    m.limit = std::max(m.limit, frame.pc + 1);
    m.has_files = m.has_files || !frame.file.empty();
    m.has_lines = m.has_lines || frame.line != 0;
    return m.id;
  }

  // A location per distinct frame: a scope is a function of that name; a PC its address in its
  // mapping (when the record names the module) and one line: its function (Frame::label(), as
  // report and folded name it) with the file and line the symbolised record gives.
  std::uint64_t location(const Frame& frame) {
    std::string key = frame.is_scope() ? "s" : "p";
    key += frame.is_scope() ? frame.scope : std::to_string(frame.pc);
    if (!frame.is_scope()) {
      key.push_back('\0');
      key += frame.label();
      key.push_back('\0');
      key += frame.file;
      key.push_back('\0');
      key += std::to_string(frame.line);
      key.push_back('\0');
      key += frame.module;
      key.push_back('\0');
      key += std::to_string(frame.pc - frame.module_offset);
    }
    const auto found = location_ids_.find(key);
    if (found != location_ids_.end()) return found->second;
    const std::uint64_t id = location_ids_.size() + 1;
    location_ids_.emplace(std::move(key), id);
    std::string loc;
    put_varint_field(loc, 1, id);
    if (!frame.is_scope()) {
      // A module offset past the PC (a damaged record) gives no load address: no mapping then.
      if (frame.has_module() && frame.module_offset <= frame.pc && frame.pc != UINT64_MAX) {
        put_varint_field(loc, 2, mapping(frame));
      }
      put_varint_field(loc, 3, frame.pc);
    }
    std::string line;
    put_varint_field(line, 1, function(stack_label(frame), frame.file));
    if (frame.line != 0) put_varint_field(line, 2, frame.line);
    put_bytes_field(loc, 4, line);
    put_bytes_field(locations_, kProfileLocation, loc);
    ++locations_count_;
    return id;
  }

  std::uint64_t no_frames_location() {
    Frame none;
    none.scope = "[no frames]";
    return location(none);
  }

  void write_sample(const std::vector<std::uint64_t>& stack, std::uint64_t count, std::uint64_t ns, const Labels& labels) {
    sample_.clear();
    packed_.clear();
    for (std::uint64_t id : stack) put_varint(packed_, id);
    put_bytes_field(sample_, 1, packed_);
    packed_.clear();
    put_varint(packed_, count);
    put_varint(packed_, ns);
    put_bytes_field(sample_, 2, packed_);
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (labels[i] == 0) continue;  // no such label on this sample
      packed_.clear();
      put_varint_field(packed_, 1, label_keys_[i]);
      put_varint_field(packed_, 2, labels[i]);
      put_bytes_field(sample_, 3, packed_);
    }
    field_.clear();
    put_bytes_field(field_, kProfileSample, sample_);
    gzip_.write(field_);
    ++pprof_samples_;
  }

  void flush_message(std::string& message) {
    gzip_.write(message);
    message.clear();
  }

  StoredGzip gzip_;
  std::vector<std::string> strings_;
  std::map<std::string, std::uint64_t> string_ids_;
  std::vector<std::uint64_t> label_keys_;
  std::map<std::string, std::uint64_t> function_ids_;
  std::map<std::string, std::uint64_t> location_ids_;
  std::map<std::string, std::size_t> mapping_ids_;
  std::vector<Mapping> mappings_;
  std::string functions_, locations_;  // encoded Profile fields, written at the end
  std::map<std::vector<std::uint64_t>, std::uint64_t> stacks_;
  std::vector<std::uint64_t> stack_;
  std::string key_, sample_, packed_, field_;
  std::optional<std::int64_t> first_ms_, last_ms_;
  std::uint64_t samples_ = 0, pprof_samples_ = 0, blocks_ = 0, blocks_without_samples_ = 0, overwritten_ = 0;
  std::uint64_t misses_ = 0, misses_without_samples_ = 0;
  std::uint64_t functions_count_ = 0, locations_count_ = 0;
};

}  // namespace

std::unique_ptr<Writer> make_pprof_writer(std::ostream& out) { return std::make_unique<PprofWriter>(out); }

}  // namespace loopcanary::tool::exporting
