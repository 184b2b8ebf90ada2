// SPDX-License-Identifier: MIT
// The small parts of the tool's model (model.hpp): names, labels, times, log sources.
#include "model.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <ostream>
#include <sstream>
#include <string_view>

#include "loopcanary/format.hpp"
#include "loopcanary/health.hpp"
#include "loopcanary/record_fields.hpp"
#include "loopcanary_culprit/culprit_rule.hpp"

namespace loopcanary::tool {

namespace {

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's civil algorithm).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool digits(std::string_view text, std::size_t at, std::size_t count, unsigned& out) noexcept {
  if (at + count > text.size()) return false;
  unsigned value = 0;
  for (std::size_t i = at; i < at + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    value = value * 10 + static_cast<unsigned>(text[i] - '0');
  }
  out = value;
  return true;
}

}  // namespace

std::size_t TopEntry::leaf() const noexcept {
  std::size_t i = 0;
  while (i < frames.size() && frames[i].is_scope()) ++i;
  return i;
}

bool TopEntry::leaf_known() const noexcept {
  const std::size_t i = leaf();
  if (i == frames.size()) return true;
  const Frame& low = frames[i];
  return culprit::leaf_known(low.pc == leaf_high.pc, culprit::FrameFacts{{}, low.function, {}, low.module},
                             culprit::FrameFacts{{}, leaf_high.function, {}, leaf_high.module});
}

std::string Frame::label() const {
  if (!function.empty()) return function;
  if (!scope.empty()) return scope;
  if (!module.empty()) {
    const std::size_t slash = module.rfind('/');
    return (slash == std::string::npos ? module : module.substr(slash + 1)) + "+" + hex(module_offset);
  }
  return hex(pc);
}

void LogRecord::clear() noexcept {
  file.clear();
  line = 0;
  from_capture = false;
  source.clear();
  stacks.clear();
  top.clear();
  stages.clear();
  clear_fields();
}

namespace {
// A listed field (loopcanary/record_fields.hpp) back to its default, keeping a string's capacity.
void reset(std::uint64_t& v) noexcept { v = 0; }
void reset(std::optional<std::uint64_t>& v) noexcept { v.reset(); }
void reset(std::string& v) noexcept { v.clear(); }
void reset(Phase& v) noexcept { v = Phase::final; }
void reset(Cause& v) noexcept { v = Cause::unknown; }
}  // namespace
#define LOOPCANARY_RESET(name, kind, value, unit) reset(name);
#define LOOPCANARY_RESET_CPU(name, kind, value, unit) reset(cpu_##name);
#define LOOPCANARY_RESET_SAMPLES(name, kind, value, unit) reset(samples_##name);

void LogRecord::clear_fields() noexcept {
  LOOPCANARY_BLOCK_FIELDS(LOOPCANARY_RESET)
  LOOPCANARY_BLOCK_CPU_FIELDS(LOOPCANARY_RESET_CPU)
  LOOPCANARY_BLOCK_SAMPLE_FIELDS(LOOPCANARY_RESET_SAMPLES)
  delayed_by_dispatch = 0;
  delayed_by.clear();
  hung = false;
  unwatched = false;
  end_estimated = false;
  running_at_stop = false;
  top_stacks = false;
  has_linux = false;
  wall_ms.reset();
  clock.clear();
  wait.other = 0;
  wait.objects.clear();
}

void HealthLog::clear() noexcept {
  file.clear();
  line = 0;
  from_capture = false;
  source.clear();
  LOOPCANARY_HEALTH_FIELDS(LOOPCANARY_RESET)
  events.clear();
  wall_ms.reset();
  clock.clear();
}

namespace {

// The value among `values` whose to_string() spelling is `text`; false (out untouched) if none.
template <typename Enum>
bool parse_spelling(std::string_view text, std::initializer_list<Enum> values, Enum& out) noexcept {
  for (Enum v : values) {
    if (text == to_string(v)) {
      out = v;
      return true;
    }
  }
  return false;
}

}  // namespace

bool parse_phase(std::string_view text, Phase& out) noexcept {
  return parse_spelling(text, {Phase::in_progress, Phase::hang, Phase::final, Phase::deadline_miss}, out);
}

bool parse_cause(std::string_view text, Cause& out) noexcept {
  return parse_spelling(text, {Cause::unknown, Cause::running, Cause::waiting, Cause::starved}, out);
}

bool parse_wait_kind(std::string_view text, WaitKind& out) noexcept {
  return parse_spelling(text,
                        {WaitKind::none, WaitKind::mutex, WaitKind::condition, WaitKind::futex, WaitKind::file,
                         WaitKind::socket, WaitKind::pipe, WaitKind::poll, WaitKind::sleep, WaitKind::disk,
                         WaitKind::syscall},
                        out);
}

namespace {

// `text` (UTF-8, as the model holds names) into the core's fixed buffer `to`, NUL-terminated,
// cut to fit at a character boundary.
template <std::size_t N>
void bytes_into(char (&to)[N], const std::string& text) noexcept {
  std::size_t n = std::min(text.size(), N - 1);
  if (n < text.size()) {
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0u) == 0x80u) --n;  // not inside one
  }
  std::memcpy(to, text.data(), n);
  to[n] = '\0';
}

}  // namespace

loopcanary::WaitReading wait_reading(const WaitEntry& entry) noexcept {
  loopcanary::WaitReading reading;
  loopcanary::WaitObject& o = reading.object;
  o.kind = entry.kind;
  o.fd = entry.fd ? static_cast<std::int32_t>(std::min<std::uint64_t>(*entry.fd, 0x7FFFFFFF)) : -1;
  o.address = entry.address;
  o.value = entry.value;
  bytes_into(o.text, entry.text);
  for (const WaitChainHop& from : entry.chain) {
    if (reading.chain_count == loopcanary::kWaitChainMax) break;
    loopcanary::WaitHop& hop = reading.chain[reading.chain_count++];
    hop.address = from.address;
    hop.owner = static_cast<std::uint32_t>(std::min<std::uint64_t>(from.tid, 0xFFFFFFFFu));
    bytes_into(hop.owner_name, from.name);
  }
  reading.deadlock = entry.deadlock;
  if (!entry.owner) return reading;
  const WaitHolder& holder = *entry.owner;
  o.owner = static_cast<std::uint32_t>(std::min<std::uint64_t>(holder.tid, 0xFFFFFFFFu));
  bytes_into(o.owner_name, holder.name);
  if (holder.loop) reading.owner_loop = holder.loop->c_str();
  for (const Frame& f : holder.frames) {
    if (f.is_scope() || reading.holder_pc_count == loopcanary::kMaxFrames) continue;
    reading.holder_frames[reading.holder_pc_count++] = f.pc;
  }
  return reading;
}

std::string wait_text(const WaitEntry& entry) {
  const loopcanary::WaitReading reading = wait_reading(entry);
  std::string text(256, '\0');
  loopcanary::FormatResult result = loopcanary::format_wait(reading, text.data(), text.size());
  if (result.needed > result.length) {  // a long loop name
    text.resize(result.needed + 1);
    result = loopcanary::format_wait(reading, text.data(), text.size());
  }
  text.resize(result.length);
  return text;
}

namespace {

// `count` of `of` per mille, with `of` brought into the core's 32-bit range (both halved alike).
std::uint32_t permille_of(std::uint64_t count, std::uint64_t of) noexcept {
  if (count > of) count = of;  // a share is at most the whole
  while (of > 0xFFFF'FFFFu) {
    of >>= 1;
    count >>= 1;
  }
  return loopcanary::share_permille(static_cast<loopcanary::tick_t>(count), static_cast<loopcanary::tick_t>(of));
}

}  // namespace

std::string share_percent(std::uint64_t count, std::uint64_t of) {
  char text[16];
  loopcanary::TextWriter w(text, sizeof text);
  w.percent(permille_of(count, of));
  w.finish();
  return text;
}

std::uint32_t Culprit::share_permille() const noexcept { return permille_of(samples, of); }

std::string cause_holder_text(const WaitEntry& entry) {
  std::string text;
  if (!entry.owner) return text;
  std::size_t shown = 0;
  for (const Frame& f : entry.owner->frames) {
    if (f.is_scope()) continue;
    if (shown == loopcanary::kCauseHolderFrames) return text + " <- ...";
    text += shown++ == 0 ? "; holder in " : " <- ";
    text += f.label();
  }
  return text;
}

std::string holder_text(const WaitHolder& holder) {
  const std::string tid = "(tid " + std::to_string(holder.tid) + ")";
  return holder.name.empty() ? tid : holder.name + " " + tid;
}

const char* to_string(WarningKind kind) noexcept {
  switch (kind) {
    case WarningKind::unreadable: return "unreadable";
    case WarningKind::torn_tail: return "torn tail";
    case WarningKind::malformed_json: return "malformed JSON";
    case WarningKind::too_deep: return "too deep";
    case WarningKind::too_long: return "too long";
    case WarningKind::wrong_type: return "wrong type";
    case WarningKind::missing_field: return "missing field";
    case WarningKind::unknown_version: return "unknown format version";
    case WarningKind::garbage: return "garbage";
    case WarningKind::crc_mismatch: return "CRC mismatch";
    case WarningKind::unknown_type: return "unknown packet type";
    case WarningKind::unknown_config: return "unknown configuration";
    case WarningKind::malformed_packet: return "malformed packet";
    case WarningKind::unknown_kind: return "unknown record kind";
    case WarningKind::orphan_evidence: return "evidence out of order";
    case WarningKind::not_unwound: return "stacks not unwound";
    case WarningKind::box_discarded: return "crash box discarded";
    case WarningKind::count_: break;
  }
  return "?";
}

std::uint64_t ReadStats::warnings_total() const noexcept {
  std::uint64_t total = 0;
  for (std::uint64_t w : warnings) total += w;
  return total;
}

std::string log_source(const std::string& file) {
  // <stem>.<YYYYMMDDTHHMMSSZ>-<serial digits>.jsonl → <stem>.jsonl (the same for captures)
  const auto ends_with = [&file](std::string_view suffix) {
    return file.size() > suffix.size() && file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  const std::string_view kSuffix = ends_with(kCaptureSuffix) ? std::string_view(kCaptureSuffix) : ".jsonl";
  const std::size_t suffix = kSuffix.size();
  if (!ends_with(kSuffix)) return file;
  const std::size_t body_end = file.size() - suffix;
  std::size_t dash = body_end;
  while (dash > 0 && file[dash - 1] >= '0' && file[dash - 1] <= '9') --dash;
  if (dash == body_end || dash == 0 || file[dash - 1] != '-') return file;
  --dash;  // at '-'
  const std::size_t stamp_length = 16;  // YYYYMMDDTHHMMSSZ
  if (dash < stamp_length + 1) return file;
  const std::size_t stamp = dash - stamp_length;
  if (file[stamp - 1] != '.' || file[stamp + 8] != 'T' || file[dash - 1] != 'Z') return file;
  for (std::size_t i = stamp; i < dash - 1; ++i) {
    if (i == stamp + 8) continue;
    if (file[i] < '0' || file[i] > '9') return file;
  }
  return file.substr(0, stamp - 1).append(kSuffix);
}

bool parse_utc_time(std::string_view text, std::int64_t& ms) noexcept {
  unsigned year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, milli = 0;
  if (!digits(text, 0, 4, year) || text.size() < 10 || text[4] != '-' || !digits(text, 5, 2, month) ||
      text[7] != '-' || !digits(text, 8, 2, day)) {
    return false;
  }
  std::size_t at = 10;
  if (at < text.size() && (text[at] == 'T' || text[at] == ' ')) {
    if (!digits(text, at + 1, 2, hour) || at + 3 >= text.size() || text[at + 3] != ':' ||
        !digits(text, at + 4, 2, minute)) {
      return false;
    }
    at += 6;
    if (at < text.size() && text[at] == ':') {
      if (!digits(text, at + 1, 2, second)) return false;
      at += 3;
      if (at < text.size() && text[at] == '.') {
        std::size_t n = 0;
        unsigned scale = 100;
        for (++at; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at, ++n) {
          milli += static_cast<unsigned>(text[at] - '0') * scale;
          scale /= 10;
        }
        if (n == 0) return false;
      }
    }
  }
  if (at < text.size() && text[at] == 'Z') ++at;
  if (at != text.size()) return false;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return false;
  const std::int64_t days = days_from_civil(static_cast<std::int64_t>(year), month, day);
  ms = ((days * 24 + hour) * 60 + minute) * 60'000 + static_cast<std::int64_t>(second) * 1000 + milli;
  return true;
}

std::string format_utc_time(std::int64_t ms) {
  std::int64_t days = ms >= 0 ? ms / 86'400'000 : (ms - 86'399'999) / 86'400'000;
  const auto rest = static_cast<unsigned>(ms - days * 86'400'000);  // 0 .. 86'399'999
  // civil_from_days (Howard Hinnant).
  days += 719468;
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const auto doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  const std::int64_t y = static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2 ? 1 : 0);
  char text[64];
  std::snprintf(text, sizeof text, "%04lld-%02u-%02uT%02u:%02u:%02u.%03uZ", static_cast<long long>(y), m, d,
                rest / 3'600'000 % 24, rest / 60'000 % 60, rest / 1000 % 60, rest % 1000);
  return text;
}

void write_json_string(std::ostream& out, const std::string& text, bool html_safe) {
  out.put('"');
  char hex[8];
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x80) {
      const std::size_t n = loopcanary::utf8_sequence(text.c_str() + i);
      if (n == 0) {
        out << "\\ufffd";
        ++i;
      } else {
        out.write(text.data() + i, static_cast<std::streamsize>(n));
        i += n;
      }
      continue;
    }
    ++i;
    if (c == '"' || c == '\\') {
      out.put('\\');
      out.put(c);
    } else if (byte < 0x20 || (html_safe && (c == '<' || c == '>' || c == '&'))) {
      std::snprintf(hex, sizeof hex, "\\u%04x", static_cast<unsigned>(byte));
      out << hex;
    } else {
      out.put(c);
    }
  }
  out.put('"');
}

std::string name_text(const char* bytes) {
  std::string text;
  while (*bytes != '\0') {
    const std::size_t n = static_cast<unsigned char>(*bytes) < 0x80u ? 1 : loopcanary::utf8_sequence(bytes);
    if (n == 0) {
      text += "\xEF\xBF\xBD";  // U+FFFD, as the core's writers show the byte
      ++bytes;
    } else {
      text.append(bytes, n);
      bytes += n;
    }
  }
  return text;
}

std::string json_string(const std::string& text) {
  std::ostringstream out;
  write_json_string(out, text);
  return out.str();
}

}  // namespace loopcanary::tool
