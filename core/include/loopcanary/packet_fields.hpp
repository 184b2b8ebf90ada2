// SPDX-License-Identifier: MIT
// The scalar runs of the packet bodies, written once in wire order: for each field its member
// name, its codec, its width in bits and the format version that added it. The core's encoders
// (packet.cpp, evidence.cpp) and the host tool's decoder (sim/tool/packet_reader.cpp) both walk
// these lists, so a field's place, encoding and width are stated here only.
// docs/report-format.md ("Binary form", "Evidence packets") is the specification they follow.
//
// Codecs (the encoders' expansion is LOOPCANARY_PUT below; the decoder's is its own):
//   number   an unsigned LEB128 varint of at most `bits` bits;
//   byte     one byte;
//   phase    one byte, a Phase (deadline_miss from version 2 on);
//   cause    one byte, a Cause;
//   flags    one byte, the record flags (bits 0..3);
//   memory   a MemoryReading: a presence byte, then each known value (64 bits);
//   section  a run of its own, written and read by hand on both sides by a function named
//            after the entry (`section.<name>()`), documented there.
// Expansions name the record `r`; a `section` entry also needs an object `section`. Macros
// only (the expansions need packet.hpp), no code of its own; any context.
#pragma once

// ---- block packet (types 1 and 2): after the configuration and capacities --------------------

/// X(name, codec, bits, since)
#define LOOPCANARY_BLOCK_PACKET_FIELDS(X)                                                    \
  X(tick_hz, number, 32, 1)                                                                  \
  X(report, number, 32, 1)                                                                   \
  X(phase, phase, 8, 1)                                                                      \
  X(cause, cause, 8, 1)                                                                      \
  X(flags, flags, 8, 1)                                                                      \
  X(loop_index, byte, 8, 1)                                                                  \
  X(dispatch, number, 32, 1)                                                                 \
  X(start, number, 32, 1)                                                                    \
  X(duration_ticks, number, 64, 1)                                                           \
  X(end, section, 32, 1) /* zigzag of end - (start + duration_ticks), modulo 2^32 */         \
  X(threshold_ticks, number, 32, 1)                                                          \
  X(delayed_by, section, 32, 2) /* delayed_by_dispatch, then its event's string index */     \
  X(window_ticks, number, 64, 1)                                                             \
  X(cpu, section, 64, 1) /* presence bits 0..3, then thread_cpu_us .. process_permille */    \
  X(steal_us, number, 64, 1)                                                                 \
  X(memory, memory, 64, 2)                                                                   \
  X(records_dropped, number, 32, 1)                                                          \
  X(notes_dropped, number, 32, 1)

/// X(name, codec, bits, since): the stack table's counters, after the stages.
#define LOOPCANARY_BLOCK_PACKET_SAMPLE_FIELDS(X) \
  X(samples_taken, number, 32, 1)                \
  X(samples_missed, number, 32, 1)               \
  X(samples_overwritten, number, 32, 1)

/// X(name, codec, bits, since): one wait object of a block packet's wait part (version 4), a
/// WaitSeen.
#define LOOPCANARY_WAIT_PACKET_FIELDS(X)                                                       \
  X(kind, section, 8, 4) /* the WaitKind, 1..10 */                                             \
  X(samples, number, 32, 4)                                                                    \
  X(object.address, number, 64, 4)                                                             \
  X(fd, section, 32, 4) /* fd + 1; 0: none */                                                  \
  X(object.value, number, 64, 4)                                                               \
  X(text, section, 0, 4) /* a str of at most kWaitTextMax - 1 bytes */                          \
  X(object.owner, number, 32, 4)                                                               \
  X(owner_names, section, 0, 4) /* owner not 0: its thread name (str, at most 15), its loop */ \
  X(holder_frames, section, 64, 4) /* u8 count, then each program counter as a uv */           \
  X(chain, section, 64, 4) /* u8 (hops << 1) | deadlock, then each hop: address, owner, name */

// ---- health packet (type 3): after the configuration and the events capacity ------------------

/// X(name, codec, bits, since)
#define LOOPCANARY_HEALTH_PACKET_FIELDS(X)                                                \
  X(tick_hz, number, 32, 2)                                                               \
  X(number, number, 32, 2)                                                                \
  X(loop_index, byte, 8, 2)                                                               \
  X(start, number, 32, 2)                                                                 \
  X(end, section, 32, 2) /* the window, end - start modulo 2^32 */                         \
  X(dispatches, number, 32, 2)                                                            \
  X(busy_ticks, number, 32, 2)                                                            \
  X(idle_ticks, section, 33, 2) /* idle_ticks + 1, or 0 without an idle reading */         \
  X(blocks, number, 32, 2)                                                                \
  X(hangs, number, 32, 2)                                                                 \
  X(max_duration, number, 32, 2)                                                          \
  X(histogram, section, 32, 2) /* the count of non-zero buckets, then bucket and count */ \
  X(memory, memory, 64, 2)                                                                \
  X(health_dropped, number, 32, 2)

/// One entry of the health packet's events, after its name's string index.
#define LOOPCANARY_EVENT_HEALTH_PACKET_FIELDS(X) \
  X(dispatches, number, 32, 2)                   \
  X(deadline_misses, number, 32, 2)              \
  X(missed_periods, number, 32, 2)               \
  X(posted_ahead, number, 32, 2)                 \
  X(p50, number, 32, 2)                          \
  X(p95, number, 32, 2)                          \
  X(p99, number, 32, 2)                          \
  X(max_latency, number, 32, 2)                  \
  X(period_ticks, number, 32, 2)                 \
  X(deadline_ticks, number, 32, 2)

// ---- observation packet (type 6): after the configuration and the cause rule ------------------

/// X(name, codec, bits, since): an Observation's scalars.
#define LOOPCANARY_OBSERVATION_PACKET_FIELDS(X)                                                   \
  X(tick_hz, number, 32, 2)                                                                       \
  X(report, number, 32, 2)                                                                        \
  X(records_dropped, number, 32, 2)                                                               \
  X(notes_dropped, number, 32, 2)                                                                 \
  X(phase, phase, 8, 2)                                                                           \
  X(flags, flags, 8, 2)                                                                           \
  X(loop_index, byte, 8, 2)                                                                       \
  X(watch, byte, 8, 2)                                                                            \
  X(note.seq, number, 32, 2)                                                                      \
  X(note.begin, number, 32, 2)                                                                    \
  X(note.end, number, 32, 2)                                                                      \
  X(duration_ticks, number, 64, 2)                                                                \
  X(threshold_ticks, number, 32, 2)                                                               \
  X(delayed_by, section, 32, 2) /* delayed_by_dispatch, then its event's name when not 0 */      \
  X(cpu, section, 64, 2) /* the first and last CPU readings, unless the dispatch was unwatched */ \
  X(memory, memory, 64, 2)                                                                        \
  X(samples_missed, number, 32, 2)

// ---- the encoders' expansion ---------------------------------------------------------------------

// Writes one entry of a list above to a detail::ByteWriter `w` (the current format version
// writes every entry). Expanded inside the core's encoders only.
#define LOOPCANARY_PUT(name, codec, bits, since) LOOPCANARY_PUT_##codec(name)
#define LOOPCANARY_PUT_number(name) w.uv(r.name);
#define LOOPCANARY_PUT_byte(name) w.u8(static_cast<unsigned>(r.name));
#define LOOPCANARY_PUT_phase(name) LOOPCANARY_PUT_byte(name)
#define LOOPCANARY_PUT_cause(name) LOOPCANARY_PUT_byte(name)
#define LOOPCANARY_PUT_flags(name) LOOPCANARY_PUT_byte(name)
#define LOOPCANARY_PUT_memory(name) w.memory(r.name);
#define LOOPCANARY_PUT_section(name) section.name();
