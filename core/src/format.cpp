// SPDX-License-Identifier: MIT
#include "loopcanary/format.hpp"

#include <cstdint>

#include "loopcanary/health.hpp"
#include "loopcanary/record_fields.hpp"
#include "loopcanary/time.hpp"

namespace loopcanary {
namespace {

constexpr char kTruncatedMarker[] = "...[truncated]\n";

using fields::event_name;
using fields::name_or;

std::uint64_t us_of(const BlockRecord& r, std::uint64_t ticks) noexcept { return fields::us(r.tick_hz, ticks); }

using fields::sample_offset_us;
using fields::scope_name;

// A stack's frames in the text form: scope names (" < " between), then " | pc" and the program
// counters; the innermost one as "LOW..HIGH" when `leaf_high` is above it (a top entry's range).
void stack_text(TextWriter& w, std::uint8_t scope_count, std::uint8_t pc_count, const Frame* frames,
                Frame leaf_high) noexcept {
  for (std::uint8_t f = 0; f < scope_count; ++f) {
    if (f != 0) w.puts(" < ");
    w.name(scope_name(frames[f]));
  }
  if (pc_count == 0) return;
  w.puts(scope_count > 0 ? " | pc" : "pc");
  for (std::uint8_t f = 0; f < pc_count; ++f) {
    w.put(' ');
    w.hex(frames[scope_count + f]);
    if (f == 0 && leaf_high > frames[scope_count]) {
      w.puts("..");
      w.hex(leaf_high);
    }
  }
}

// A stack's frames in the JSON form: "scopes":[...],"pcs":[...].
void stack_json(TextWriter& w, std::uint8_t scope_count, std::uint8_t pc_count, const Frame* frames) noexcept {
  w.puts("\"scopes\":[");
  for (std::uint8_t f = 0; f < scope_count; ++f) {
    if (f != 0) w.put(',');
    w.json_string(scope_name(frames[f]));
  }
  w.puts("],\"pcs\":[");
  for (std::uint8_t f = 0; f < pc_count; ++f) {
    if (f != 0) w.put(',');
    w.put('"');
    w.hex(frames[scope_count + f]);
    w.put('"');
  }
  w.put(']');
}

// A lock's holder: " held by 'NAME' (tid N[, loop 'LOOP'])", or " (holder not known)".
void holder_text(TextWriter& w, std::uint32_t owner, const char* name, const char* loop) noexcept {
  if (owner == 0) {
    w.puts(" (holder not known)");
    return;
  }
  w.puts(" held by ");
  if (name[0] != '\0') {
    w.put('\'');
    w.name(name);
    w.puts("' ");
  }
  w.puts("(tid ");
  w.u64(owner);
  if (loop != nullptr) {
    w.puts(", loop '");
    w.name(loop);
    w.put('\'');
  }
  w.put(')');
}

// The wait object's text (format_wait) onto `w`. Names from the system (paths, thread names)
// go through name(): a control character in them cannot forge a line.
void wait_text(TextWriter& w, const WaitReading& reading) noexcept {
  const WaitObject& o = reading.object;
  w.puts(to_string(o.kind));
  switch (o.kind) {
    case WaitKind::mutex:
    case WaitKind::condition:
    case WaitKind::futex:
      w.put(' ');
      w.hex(o.address);
      break;
    case WaitKind::file:
    case WaitKind::socket:
    case WaitKind::pipe:
    case WaitKind::poll:
      w.puts(" fd ");
      w.u64(static_cast<std::uint64_t>(o.fd < 0 ? 0 : o.fd));
      if (o.kind == WaitKind::poll && o.value > 1) {
        w.puts(" (+");
        w.u64(o.value - 1u);
        w.puts(" more)");
      }
      break;
    case WaitKind::sleep:
      w.put(' ');
      w.ms(o.value / 1000u);
      w.puts(" ms");
      break;
    case WaitKind::syscall:
      w.put(' ');
      w.u64(o.value);
      break;
    case WaitKind::none:
    case WaitKind::disk: break;
  }
  if (o.text[0] != '\0') {
    w.put(' ');
    w.name(o.text);
  }
  if (o.kind == WaitKind::condition) w.puts(" (no owner)");
  if (o.kind != WaitKind::mutex) return;
  holder_text(w, o.owner, o.owner_name, reading.owner_loop);
  for (std::uint8_t i = 0; i < reading.chain_count && i < kWaitChainMax; ++i) {
    const WaitHop& hop = reading.chain[i];
    w.puts(", which waits on mutex ");
    w.hex(hop.address);
    holder_text(w, hop.owner, hop.owner_name, nullptr);
  }
  if (reading.deadlock) w.puts(": deadlock");
}

// The "wait" member: {"other":N,"objects":[{"kind":..,"samples":..,"address":..,"fd":..,
// "value":..,"text":..,"owner":null|{"tid":..,"name":..,"loop":..,"scopes":[],"pcs":[..]},
// "chain":[{"address":..,"tid":..,"name":..}],"deadlock":..}]}.
[[maybe_unused]] void wait_json(TextWriter& w, const WaitSummary& wait) noexcept {
  w.puts(",\"wait\":{\"other\":");
  w.u64(wait.other);
  w.puts(",\"objects\":[");
  for (std::uint8_t i = 0; i < wait.count; ++i) {
    const WaitSeen& seen = wait.objects[i];
    const WaitObject& o = seen.object;
    if (i != 0) w.put(',');
    w.puts("{\"kind\":");
    w.json_string(to_string(o.kind));
    w.puts(",\"samples\":");
    w.u64(seen.samples);
    w.puts(",\"address\":\"");
    w.hex(o.address);
    w.puts("\",\"fd\":");
    if (o.fd >= 0) {
      w.u64(static_cast<std::uint64_t>(o.fd));
    } else {
      w.puts("null");
    }
    w.puts(",\"value\":");
    w.u64(o.value);
    w.puts(",\"text\":");
    w.json_string(o.text);
    w.puts(",\"owner\":");
    if (o.owner == 0) {
      w.puts("null");
    } else {
      w.puts("{\"tid\":");
      w.u64(o.owner);
      w.puts(",\"name\":");
      w.json_string(o.owner_name);
      w.puts(",\"loop\":");
      if (seen.owner_loop != nullptr) {
        w.json_string(seen.owner_loop);
      } else {
        w.puts("null");
      }
      w.put(',');
      stack_json(w, 0, seen.holder_pc_count, seen.holder_frames);
      w.put('}');
    }
    w.puts(",\"chain\":[");
    for (std::uint8_t h = 0; h < seen.chain_count && h < kWaitChainMax; ++h) {
      if (h != 0) w.put(',');
      w.puts("{\"address\":\"");
      w.hex(seen.chain[h].address);
      w.puts("\",\"tid\":");
      w.u64(seen.chain[h].owner);
      w.puts(",\"name\":");
      w.json_string(seen.chain[h].owner_name);
      w.put('}');
    }
    w.puts(seen.deadlock ? "],\"deadlock\":true}" : "],\"deadlock\":false}");
  }
  w.puts("]}");
}

struct FlagName {
  std::uint8_t bit;
  const char* name;
};
constexpr FlagName kFlagNames[] = {
    {kFlagHung, "hung"},
    {kFlagUnwatched, "unwatched"},
    {kFlagEndEstimated, "end_estimated"},
    {kFlagRunningAtStop, "running_at_stop"}};

// "\nmemory = NAME N B, ..." with the known values; nothing when none is known.
void memory_text(TextWriter& w, const MemoryReading& memory) noexcept {
  if (memory.valid == 0) return;
  w.puts("\nmemory = ");
  const char* separator = "";
  for (unsigned i = 0; i < kMemoryValues; ++i) {
    const auto which = static_cast<MemoryValue>(i);
    if (!memory.has(which)) continue;
    w.puts(separator);
    w.puts(to_string(which));
    w.put(' ');
    w.u64(memory.value[i]);
    w.puts(" B");
    separator = ", ";
  }
}

// ,"memory":{...} with null for each unknown value.
void memory_json(TextWriter& w, const MemoryReading& memory) noexcept {
  w.puts(",\"memory\":{");
  for (unsigned i = 0; i < kMemoryValues; ++i) {
    const auto which = static_cast<MemoryValue>(i);
    if (i != 0) w.put(',');
    w.put('"');
    w.puts(to_string(which));
    w.puts("\":");
    if (memory.has(which)) {
      w.u64(memory.value[i]);
    } else {
      w.puts("null");
    }
  }
  w.put('}');
}


// One value of a field list (record_fields.hpp) in the JSON form, by its type.
void json_value(TextWriter& w, const char* text) noexcept { w.json_string(text); }
void json_value(TextWriter& w, std::uint64_t number) noexcept { w.u64(number); }
LOOPCANARY_NOINLINE void json_value(TextWriter& w, Maybe number) noexcept {
  if (number.known) {
    w.u64(number.value);
  } else {
    w.puts("null");
  }
}
void json_value(TextWriter& w, Phase phase) noexcept { w.json_string(to_string(phase)); }
void json_value(TextWriter& w, Cause cause) noexcept { w.json_string(to_string(cause)); }

// ,"name":value for each field of a list; the first member of an object (`first`) is written
// after the object's opening, LOOPCANARY_JSON_OPENING, in the same literal. `first` is known at
// each expansion (straight-line code): one literal per member remains.
#define LOOPCANARY_JSON_OPENING ""
#define LOOPCANARY_JSON_MEMBER(name, kind, value, unit)                                      \
  w.puts(first ? LOOPCANARY_JSON_OPENING "\"" #name "\":" : ",\"" #name "\":");      \
  first = false;                                                                      \
  json_value(w, value);
}  // namespace

void TextWriter::puts(const char* s) noexcept {
  for (; *s != '\0'; ++s) put(*s);
}

std::size_t utf8_sequence(const char* s) noexcept {
  const auto byte = [s](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  std::uint32_t lowest = 0;  // below it, an overlong form
  std::uint32_t code = 0;
  if (lead >= 0xC2u && lead <= 0xDFu) {
    length = 2;
    code = lead & 0x1Fu;
    lowest = 0x80u;
  } else if (lead >= 0xE0u && lead <= 0xEFu) {
    length = 3;
    code = lead & 0x0Fu;
    lowest = 0x800u;
  } else if (lead >= 0xF0u && lead <= 0xF4u) {
    length = 4;
    code = lead & 0x07u;
    lowest = 0x10000u;
  } else {
    return 0;
  }
  for (std::size_t k = 1; k < length; ++k) {  // a NUL is not a continuation byte: reading stops
    if ((byte(k) & 0xC0u) != 0x80u) return 0;
    code = (code << 6) | (byte(k) & 0x3Fu);
  }
  if (code < lowest || code > 0x10FFFFu || (code >= 0xD800u && code <= 0xDFFFu)) return 0;
  return length;
}

std::size_t TextWriter::non_ascii(const char* s, const char* replacement) noexcept {
  const std::size_t length = utf8_sequence(s);
  if (length == 0) {
    puts(replacement);
    return 1;
  }
  for (std::size_t k = 0; k < length; ++k) put(s[k]);
  return length;
}

void TextWriter::name(const char* s) noexcept {
  while (*s != '\0') {
    const auto c = static_cast<unsigned char>(*s);
    if (c >= 0x80u) {
      s += non_ascii(s, "\xEF\xBF\xBD");  // U+FFFD in UTF-8
    } else {
      put(c < 0x20u ? '?' : *s);
      ++s;
    }
  }
}

void TextWriter::u64(std::uint64_t v) noexcept {
  char digits[20];
  int n = 0;
  do {
    const std::uint64_t tenth = detail::divide(v, 10u);
    digits[n++] = static_cast<char>('0' + (v - tenth * 10u));
    v = tenth;
  } while (v != 0);
  while (n > 0) put(digits[--n]);
}

void TextWriter::hex(std::uint64_t v) noexcept {
  puts("0x");
  bool started = false;
  for (int shift = 60; shift >= 0; shift -= 4) {
    const unsigned nibble = static_cast<unsigned>(v >> shift) & 0xFu;
    if (nibble != 0 || started || shift == 0) {
      put("0123456789abcdef"[nibble]);
      started = true;
    }
  }
}

void TextWriter::ms(std::uint64_t us) noexcept {
  const std::uint64_t whole_ms = detail::divide(us, 1000u);
  u64(whole_ms);
  put('.');
  const auto frac = static_cast<unsigned>(us - whole_ms * 1000u);
  put(static_cast<char>('0' + frac / 100u));
  put(static_cast<char>('0' + frac / 10u % 10u));
  put(static_cast<char>('0' + frac % 10u));
}

void TextWriter::percent(std::uint32_t permille) noexcept {
  u64(permille / 10u);
  put('.');
  put(static_cast<char>('0' + permille % 10u));
}

void TextWriter::json_string(const char* s) noexcept {
  put('"');
  while (*s != '\0') {
    const auto c = static_cast<unsigned char>(*s);
    if (c >= 0x80u) {
      s += non_ascii(s, "\\ufffd");
      continue;
    }
    if (c == '"' || c == '\\') {
      put('\\');
      put(static_cast<char>(c));
    } else if (c < 0x20u) {
      puts("\\u00");
      put("0123456789abcdef"[c >> 4]);
      put("0123456789abcdef"[c & 0xFu]);
    } else {
      put(static_cast<char>(c));
    }
    ++s;
  }
  put('"');
}

FormatResult TextWriter::finish() noexcept {
  FormatResult result;
  result.needed = needed_;
  result.truncated = overflowed();
  if (size_ == 0) return result;
  if (result.truncated && size_ >= sizeof(kTruncatedMarker)) {
    used_ = size_ - sizeof(kTruncatedMarker);
    for (std::size_t i = 0; i + 1 < sizeof(kTruncatedMarker); ++i) buffer_[used_++] = kTruncatedMarker[i];
  }
  buffer_[used_] = '\0';
  result.length = used_;
  return result;
}

namespace {

// The text form's sections: which dispatch, when and how long (and its stages)...
void text_dispatch(TextWriter& w, const BlockRecord& r) noexcept {
  namespace f = fields::block;
  w.puts("qualifier = ");
  w.name(f::qualifier(r));
  w.puts("\nloop = ");
  w.name(f::loop(r));
  w.puts("\nevent = ");
  w.name(f::event(r));
  w.puts("\nreport = ");
  w.u64(f::report(r));
  w.puts(" (");
  w.puts(to_string(f::phase(r)));
  w.puts(")\ndispatch = ");
  w.u64(f::dispatch(r));
  w.puts("\ntime-start = ");
  w.u64(f::start(r));
  w.puts(" ticks @ ");
  w.u64(f::tick_hz(r));
  w.puts(" Hz\ntime-end = ");
  w.u64(f::end(r));
  const bool late = r.phase == Phase::deadline_miss;
  w.puts(r.phase == Phase::final || late ? " ticks\n" : " ticks (still running)\n");
  w.puts(late ? "duration = late by " : "duration = ");
  w.ms(f::duration_us(r));
  w.puts(late ? " ms (deadline " : " ms (threshold ");
  w.ms(f::threshold_us(r));
  w.puts(" ms)\n");
  if (late) {
    w.puts("delayed-by = ");
    if (r.delayed_by_dispatch != 0) {
      w.puts("dispatch ");
      w.u64(r.delayed_by_dispatch);
      w.puts(" (");
      w.name(event_name(r.delayed_by));
      w.puts(")\n");
    } else {
      w.puts("unknown\n");
    }
  }
  if (r.stage_count > 0) {
    w.puts("stages = ");
    for (std::uint8_t i = 0; i < r.stage_count; ++i) {
      if (i != 0) w.puts(", ");
      w.name(name_or(r.stages[i].name, "?"));
      w.put(' ');
      w.ms(us_of(r, r.stages[i].ticks));
      w.puts(" ms");
    }
    w.put('\n');
  }
}

// ... what the loop thread and the machine did over the CPU window, the memory, the cause and the
// flags...
void text_cpu(TextWriter& w, const BlockRecord& r) noexcept {
  namespace f = fields::block_cpu;
  const Maybe thread = f::thread_us(r);
  w.puts("thread-time = ");
  if (thread.known) {
    w.ms(thread.value);
    w.puts(" ms over a ");
    w.ms(f::window_us(r));
    w.puts(" ms window");
    const Maybe wait = f::thread_wait_us(r);
    if (wait.known) {
      w.puts(", ");
      w.ms(wait.value);
      w.puts(" ms waiting for a CPU");
    }
  } else {
    w.puts("n/a");
  }
  w.puts("\ncpu-busy = ");
  const Maybe busy = f::system_busy_permille(r);
  if (busy.known) {
    w.percent(static_cast<std::uint32_t>(busy.value));
    w.puts(" %, process ");
    const Maybe process = f::process_permille(r);
    if (process.known) {
      w.percent(static_cast<std::uint32_t>(process.value));
      w.puts(" %");
    } else {
      w.puts("n/a");
    }
    if (f::steal_us(r) != 0) {
      w.puts(", stolen ");
      w.ms(f::steal_us(r));
      w.puts(" ms");
    }
  } else {
    w.puts("n/a");
  }
  memory_text(w, r.memory);
  w.puts("\ncause = ");
  w.puts(to_string(fields::block::cause(r)));
  if (kWaitObjects > 0 && fields::block::cause(r) == Cause::waiting && r.wait.count > 0) {
    const WaitSeen& main = r.wait.objects[0];
    w.puts(" on ");
    wait_text(w, main);
    for (std::size_t i = 0; i < main.holder_pc_count && i < kCauseHolderFrames; ++i) {
      w.puts(i == 0 ? "; holder in " : " <- ");
      w.hex(main.holder_frames[i]);
    }
    if (main.holder_pc_count > kCauseHolderFrames) w.puts(" <- ...");
  }
  w.puts("\nflags =");
  for (const FlagName& f : kFlagNames) {
    if ((r.flags & f.bit) != 0) {
      w.put(' ');
      w.puts(f.name);
    }
  }
}

// A share of a record's samples taken, per mille (0 when none were taken): share_permille, the
// one rule every form prints a share of samples by.
std::uint32_t sample_share(const BlockRecord& r, std::uint32_t count) noexcept {
  return share_permille(count, r.samples_taken);
}

// ... what the loop's thread waited on, by object, with each holder's stack...
[[maybe_unused]] void text_waits(TextWriter& w, const BlockRecord& r) noexcept {
  if (r.wait.count == 0 && r.wait.other == 0) return;
  w.puts("\nwaits:");
  for (std::uint8_t i = 0; i < r.wait.count; ++i) {
    const WaitSeen& seen = r.wait.objects[i];
    w.puts("\n  ");
    w.percent(sample_share(r, seen.samples));
    w.puts(" % ");
    w.u64(seen.samples);
    w.put(' ');
    wait_text(w, seen);
    if (seen.holder_pc_count != 0) {
      w.puts("\n    holder ");
      stack_text(w, 0, seen.holder_pc_count, seen.holder_frames, 0);
    }
  }
  if (r.wait.other != 0) {
    w.puts("\n  other ");
    w.u64(r.wait.other);
  }
}

// ... and the samples: their counts, the stack table and the kept stacks.
void text_samples(TextWriter& w, const BlockRecord& r) noexcept {
  namespace f = fields::block_samples;
  w.puts("\nsamples = ");
  w.u64(f::taken(r));
  w.puts(" taken, ");
  w.u64(f::kept(r));
  w.puts(" kept, ");
  w.u64(f::overwritten(r));
  w.puts(" overwritten, ");
  w.u64(f::missed(r));
  w.puts(" missed\n");
  if (r.top_count > 0) {
    w.puts("top stacks:\n");
    for (std::uint8_t i = 0; i < r.top_count; ++i) {
      const TopStack& t = r.top[i];
      w.puts("  ");
      w.percent(sample_share(r, t.count));
      w.puts(" % ");
      w.u64(t.count);
      w.put(' ');
      stack_text(w, t.scope_count, t.pc_count, t.frames, t.leaf_high);
      w.put('\n');
    }
    if (r.top_other != 0) {
      w.puts("  other ");
      w.u64(r.top_other);
      w.put('\n');
    }
  }
  if (r.sample_count > 0) {
    w.puts("stacks:\n");
    for (std::uint8_t i = 0; i < r.sample_count; ++i) {
      const Sample& s = r.samples[i];
      w.puts("  +");
      w.ms(sample_offset_us(r, s));
      w.puts(" ms ");
      stack_text(w, s.scope_count, s.pc_count, s.frames, 0);
      w.put('\n');
    }
  }
}

}  // namespace

FormatResult format_wait(const WaitReading& reading, char* buffer, std::size_t size) noexcept {
  TextWriter w(buffer, size);
  wait_text(w, reading);
  return w.finish();
}

FormatResult format_text(const BlockRecord& r, char* buffer, std::size_t size) noexcept {
  TextWriter w(buffer, size);
  text_dispatch(w, r);
  text_cpu(w, r);
  if constexpr (kWaitObjects > 0) text_waits(w, r);
  text_samples(w, r);
  w.puts("dropped = ");
  w.u64(fields::block::records_dropped(r));
  w.puts(" records, ");
  w.u64(fields::block::notes_dropped(r));
  w.puts(" notes\n");
  return w.finish();
}

FormatResult format_json(const BlockRecord& r, char* buffer, std::size_t size, const JsonExtension& extension) noexcept {
  TextWriter w(buffer, size);
  w.puts("{\"format_version\":");
  w.u64(kJsonFormatVersion);
  bool first = false;
  LOOPCANARY_BLOCK_FIELDS(LOOPCANARY_JSON_MEMBER)
  w.puts(",\"delayed_by\":");
  if (r.delayed_by_dispatch != 0) {
    w.puts("{\"dispatch\":");
    w.u64(r.delayed_by_dispatch);
    w.puts(",\"event\":");
    w.json_string(event_name(r.delayed_by));
    w.put('}');
  } else {
    w.puts("null");
  }
  w.puts(",\"flags\":[");
  first = true;
  for (const FlagName& f : kFlagNames) {
    if ((r.flags & f.bit) != 0) {
      if (!first) w.put(',');
      w.json_string(f.name);
      first = false;
    }
  }
  w.puts("],\"stages\":[");
  for (std::uint8_t i = 0; i < r.stage_count; ++i) {
    if (i != 0) w.put(',');
    w.puts("{\"name\":");
    w.json_string(name_or(r.stages[i].name, "?"));
    w.puts(",\"us\":");
    w.u64(us_of(r, r.stages[i].ticks));
    w.put('}');
  }
  first = true;
#undef LOOPCANARY_JSON_OPENING
#define LOOPCANARY_JSON_OPENING "],\"cpu\":{"
  LOOPCANARY_BLOCK_CPU_FIELDS(LOOPCANARY_JSON_MEMBER)
  w.put('}');
  memory_json(w, r.memory);
  if constexpr (kWaitObjects > 0) wait_json(w, r.wait);
  first = true;
#undef LOOPCANARY_JSON_OPENING
#define LOOPCANARY_JSON_OPENING ",\"samples\":{"
  LOOPCANARY_BLOCK_SAMPLE_FIELDS(LOOPCANARY_JSON_MEMBER)
  w.puts("},\"top\":[");
  for (std::uint8_t i = 0; i < r.top_count; ++i) {
    const TopStack& t = r.top[i];
    if (i != 0) w.put(',');
    w.puts("{\"count\":");
    w.u64(t.count);
    w.put(',');
    stack_json(w, t.scope_count, t.pc_count, t.frames);
    w.puts(",\"leaf_high\":");
    if (t.pc_count != 0) {
      w.put('"');
      w.hex(t.leaf_high);
      w.put('"');
    } else {
      w.puts("null");
    }
    w.put('}');
  }
  w.puts("],\"stacks\":[");
  for (std::uint8_t i = 0; i < r.sample_count; ++i) {
    const Sample& s = r.samples[i];
    if (i != 0) w.put(',');
    w.puts("{\"at_us\":");
    w.u64(sample_offset_us(r, s));
    w.put(',');
    stack_json(w, s.scope_count, s.pc_count, s.frames);
    w.put('}');
  }
  w.put(']');
  if (extension.write != nullptr) extension.write(extension.context, w);
  w.puts("}\n");
  return w.finish();
}

namespace {

// A rate in thousandths per second as "R.r" (rounded down to 0.1).
void rate_text(TextWriter& w, std::uint32_t rate_mhz) noexcept {
  w.u64(rate_mhz / 1000u);
  w.put('.');
  w.put(static_cast<char>('0' + rate_mhz / 100u % 10u));
}

}  // namespace

FormatResult format_health_text(const HealthRecord& r, char* buffer, std::size_t size) noexcept {
  namespace f = fields::health;
  namespace fe = fields::event_health;
  TextWriter w(buffer, size);
  w.puts("qualifier = ");
  w.name(f::qualifier(r));
  w.puts("\nloop = ");
  w.name(f::loop(r));
  w.puts("\nhealth = ");
  w.u64(f::number(r));
  w.puts("\nwindow = ");
  w.u64(f::start(r));
  w.puts(" .. ");
  w.u64(f::end(r));
  w.puts(" ticks @ ");
  w.u64(f::tick_hz(r));
  w.puts(" Hz (");
  w.ms(f::window_us(r));
  w.puts(" ms)\ndispatches = ");
  w.u64(f::dispatches(r));
  w.puts(" (");
  rate_text(w, f::rate_mhz(r));
  w.puts(" /s), load ");
  w.percent(f::load_permille(r));
  w.puts(" %, idle ");
  const Maybe idle = f::idle_permille(r);
  if (idle.known) {
    w.percent(static_cast<std::uint32_t>(idle.value));
    w.puts(" %");
  } else {
    w.puts("n/a");
  }
  w.puts("\nblocks = ");
  w.u64(f::blocks(r));
  w.puts(", hangs = ");
  w.u64(f::hangs(r));
  w.puts("\nlongest = ");
  w.ms(f::max_duration_us(r));
  w.puts(" ms");
  memory_text(w, r.memory);
  for (std::uint8_t i = 0; i < r.event_count; ++i) {
    const EventHealthWindow& e = r.events[i];
    w.puts("\nevent ");
    w.name(fe::event(r, e));
    w.puts(" = ");
    w.u64(fe::dispatches(r, e));
    w.puts(" (");
    rate_text(w, fe::rate_mhz(r, e));
    w.puts(" /s), latency p50 ");
    w.ms(fe::p50_us(r, e));
    w.puts(" ms, p95 ");
    w.ms(fe::p95_us(r, e));
    w.puts(" ms, p99 ");
    w.ms(fe::p99_us(r, e));
    w.puts(" ms, max ");
    w.ms(fe::max_latency_us(r, e));
    w.puts(" ms, ");
    w.u64(fe::deadline_misses(r, e));
    w.puts(" deadline misses, ");
    w.u64(fe::missed_periods(r, e));
    w.puts(" missed periods");
    if (e.period_ticks != 0) {
      w.puts(", period ");
      w.ms(fe::period_us(r, e));
      w.puts(" ms");
    }
    if (e.deadline_ticks != 0) {
      w.puts(", deadline ");
      w.ms(fe::deadline_us(r, e));
      w.puts(" ms");
    }
  }
  w.puts("\ndropped = ");
  w.u64(f::health_dropped(r));
  w.puts(" health records\n");
  return w.finish();
}

FormatResult format_health_json(const HealthRecord& r, char* buffer, std::size_t size,
                                const JsonExtension& extension) noexcept {
  TextWriter w(buffer, size);
  const tick_t window = ticks_between(r.start, r.end);
  w.puts("{\"kind\":\"health\",\"format_version\":");
  w.u64(kJsonFormatVersion);
  bool first = false;
#undef LOOPCANARY_JSON_OPENING
#define LOOPCANARY_JSON_OPENING ""
  LOOPCANARY_HEALTH_FIELDS(LOOPCANARY_JSON_MEMBER)
  w.puts(",\"histogram\":[");
  for (std::size_t i = 0; i < kHistogramBuckets; ++i) {
    if (i != 0) w.put(',');
    w.u64(r.histogram[i]);
  }
  w.put(']');
  memory_json(w, r.memory);
  w.puts(",\"events\":[");
  for (std::uint8_t i = 0; i < r.event_count; ++i) {
    const EventHealthWindow& e = r.events[i];
    if (i != 0) w.put(',');
    first = true;
#undef LOOPCANARY_JSON_OPENING
#define LOOPCANARY_JSON_OPENING "{"
    LOOPCANARY_EVENT_HEALTH_FIELDS(LOOPCANARY_JSON_MEMBER)
#undef LOOPCANARY_JSON_OPENING
    w.put('}');
  }
  w.put(']');
  if (extension.write != nullptr) extension.write(extension.context, w);
  w.puts("}\n");
  return w.finish();
}

}  // namespace loopcanary
