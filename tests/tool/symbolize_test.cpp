// SPDX-License-Identifier: MIT
// `loopcanary symbolize` (sim/tool/symbolize.cpp): a stripped binary's records symbolised
// through its build-id (GNU .build-id layout and a plain directory), device records through
// --elf, one addr2line run per file, the ELF reader on its own and on damaged input, and the
// command's error paths. The fixture program (symbolize_fixture.cpp) is built with -O0 -g; the
// build also leaves `<fixture>.debug` (objcopy --only-keep-debug) and `<fixture>.stripped`
// (strip --strip-all) next to it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "model.hpp"
#include "packet_builder.hpp"
#include "symbolize.hpp"

namespace lt = loopcanary::tool;
namespace fs = std::filesystem;

namespace {

const std::string kFixture = LOOPCANARY_SYMBOLIZE_FIXTURE;
const std::string kDebug = kFixture + ".debug";
const std::string kStripped = kFixture + ".stripped";
const std::string kSource = LOOPCANARY_SYMBOLIZE_FIXTURE_SOURCE;

std::string run_command(const std::string& command) {
  std::string out;
  if (FILE* p = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, p)) > 0) out.append(buffer, n);
    ::pclose(p);
  }
  return out;
}

// The build-id as binutils' readelf prints it (an oracle independent of read_elf_info).
std::string readelf_build_id(const std::string& path) {
  const std::string text = run_command("readelf -n '" + path + "' 2>/dev/null");
  const std::string key = "Build ID: ";
  const std::size_t at = text.find(key);
  if (at == std::string::npos) return {};
  const std::size_t end = text.find_first_of("\r\n", at);
  return text.substr(at + key.size(), end - at - key.size());
}

struct Symbol {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
};

// A function's address and size from `nm -S` of the unstripped fixture.
Symbol nm_symbol(const std::string& name) {
  std::istringstream text(run_command("nm -S -C '" + kFixture + "'"));
  std::string line;
  while (std::getline(text, line)) {
    std::istringstream fields(line);
    std::string address, size, type, symbol;
    fields >> address >> size >> type;
    std::getline(fields, symbol);
    if (symbol.find(name) != std::string::npos && (type == "T" || type == "t")) {
      return Symbol{std::stoull(address, nullptr, 16), std::stoull(size, nullptr, 16)};
    }
  }
  return {};
}

// The source lines between the fixture's markers "fixture:<name>:begin" and ":end".
std::pair<std::uint32_t, std::uint32_t> marker_lines(const std::string& name) {
  std::ifstream in(kSource);
  std::string line;
  std::uint32_t number = 0, begin = 0, end = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find("fixture:" + name + ":begin") != std::string::npos) begin = number;
    if (line.find("fixture:" + name + ":end") != std::string::npos) end = number;
  }
  return {begin, end};
}

std::string hex(std::uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

class SymbolizeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/loopcanary-symbolize-test.XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    build_id_ = readelf_build_id(kStripped);
    ASSERT_GE(build_id_.size(), 16u) << "the fixture has no GNU build-id";
    inner_ = nm_symbol("fixture_inner");
    outer_ = nm_symbol("fixture_outer");
    ASSERT_GT(inner_.size, 4u);
    ASSERT_GT(outer_.size, 4u);
    inner_lines_ = marker_lines("inner");
    outer_lines_ = marker_lines("outer");
    ASSERT_LT(inner_lines_.first, inner_lines_.second);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A Linux record of the stripped fixture: one sample [exact PC in fixture_inner, return
  // address in fixture_outer], the "linux" frames with module, build-id and offset only.
  std::string linux_record(const std::string& module, const std::string& build_id, std::uint64_t dispatch = 1) const {
    const std::uint64_t bias = 0x555500000000;
    const std::uint64_t in = inner_.address + inner_.size / 2;
    const std::uint64_t out = outer_.address + outer_.size / 2;
    const auto frame = [&](std::uint64_t offset) {
      return "{\"pc\":\"" + hex(bias + offset) + "\",\"module\":\"" + module + "\",\"build_id\":\"" + build_id +
             "\",\"offset\":\"" + hex(offset) + "\"}";
    };
    return "{\"report\":" + std::to_string(dispatch) + ",\"phase\":\"final\",\"qualifier\":\"fw-1\",\"loop\":\"main\","
           "\"loop_index\":0,\"event\":\"tick\",\"dispatch\":" + std::to_string(dispatch) +
           ",\"tick_hz\":1000000,\"start\":0,\"end\":200000,\"duration_ticks\":200000,\"duration_us\":200000,"
           "\"threshold_us\":100000,\"cause\":\"running\",\"flags\":[],\"samples\":{\"taken\":1,\"kept\":1,"
           "\"overwritten\":0,\"missed\":0},\"top\":[{\"pc\":\"" + hex(bias + in) + "\",\"count\":1}],\"top_other\":0,"
           "\"stacks\":[{\"at_us\":0,\"scopes\":[],\"pcs\":[\"" + hex(bias + in) + "\",\"" + hex(bias + out) +
           "\"]}],\"records_dropped\":0,\"notes_dropped\":0,\"linux\":{\"time\":\"2026-01-01T00:00:00.000Z\","
           "\"clock\":\"tsc\",\"frames\":[" + frame(in) + "," + frame(out) + "]}}\n";
  }

  // A device record: absolute PCs, no "linux" member.
  std::string device_record() const {
    const std::uint64_t in = inner_.address + inner_.size / 2;
    const std::uint64_t out = outer_.address + outer_.size / 2;
    return "{\"report\":1,\"phase\":\"final\",\"loop\":\"main\",\"dispatch\":7,\"duration_us\":5000,"
           "\"top\":[{\"pc\":\"" + hex(in) + "\",\"count\":1}],\"stacks\":[{\"at_us\":0,\"scopes\":[\"s\"],\"pcs\":[\"" +
           hex(in) + "\",\"" + hex(out) + "\"]}]}\n";
  }

  std::string write(const std::string& name, const std::string& content) const {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }

  int run(lt::Options options, std::string& out, std::string& err) const {
    options.command = "symbolize";
    std::ostringstream o, e;
    const int status = lt::run_symbolize(options, o, e);
    out = o.str();
    err = e.str();
    return status;
  }

  // The PC frames of the first sample of each output line, through the tool's own reader.
  static std::vector<lt::Frame> sample_frames(const std::string& line) {
    lt::LogRecord record;
    lt::WarningKind kind{};
    std::string what;
    EXPECT_TRUE(lt::parse_record(line.data(), line.size(), record, kind, what)) << what << "\n" << line;
    std::vector<lt::Frame> frames;
    if (!record.stacks.empty()) {
      for (const lt::Frame& f : record.stacks[0].frames) {
        if (!f.is_scope()) frames.push_back(f);
      }
    }
    return frames;
  }

  void expect_fixture_sources(const std::vector<lt::Frame>& frames) const {
    ASSERT_EQ(frames.size(), 2u);
    EXPECT_EQ(frames[0].function.rfind("fixture_inner", 0), 0u) << frames[0].function;
    EXPECT_EQ(fs::path(frames[0].file).filename(), fs::path(kSource).filename());
    EXPECT_GE(frames[0].line, inner_lines_.first);
    EXPECT_LE(frames[0].line, inner_lines_.second);
    EXPECT_EQ(frames[1].function.rfind("fixture_outer", 0), 0u) << frames[1].function;
    EXPECT_GE(frames[1].line, outer_lines_.first);
    EXPECT_LE(frames[1].line, outer_lines_.second);
  }

  std::string dir_;
  std::string build_id_;
  Symbol inner_, outer_;
  std::pair<std::uint32_t, std::uint32_t> inner_lines_, outer_lines_;
};

TEST_F(SymbolizeTest, ElfInfoReadsTheBuildIdOfStrippedAndDebugFiles) {
  lt::ElfInfo stripped, debug;
  std::string error;
  ASSERT_TRUE(lt::read_elf_info(kStripped, stripped, error)) << error;
  ASSERT_TRUE(lt::read_elf_info(kDebug, debug, error)) << error;
  EXPECT_EQ(stripped.build_id, build_id_);
  EXPECT_EQ(debug.build_id, build_id_);
  EXPECT_EQ(stripped.is64, sizeof(void*) == 8);
  EXPECT_FALSE(stripped.loads.empty());
  EXPECT_TRUE(stripped.covers(inner_.address));
  EXPECT_FALSE(stripped.covers(0xFFFFFFFFFFFF0000ull));
  EXPECT_STREQ(lt::addr2line_program(stripped.machine), "addr2line");
}

TEST_F(SymbolizeTest, ElfInfoRefusesDamagedFilesWithoutCrashing) {
  lt::ElfInfo info;
  std::string error;
  EXPECT_FALSE(lt::read_elf_info(write("text", "hello, not an ELF file\n"), info, error));
  EXPECT_EQ(error, "not an ELF file");
  EXPECT_FALSE(lt::read_elf_info(dir_ + "/missing", info, error));
  EXPECT_NE(error.find("cannot open"), std::string::npos);
  // The fixture cut inside its program headers.
  std::ifstream in(kStripped, std::ios::binary | std::ios::ate);
  std::string bytes(static_cast<std::size_t>(in.tellg()), '\0');
  in.seekg(0);
  in.read(&bytes[0], static_cast<std::streamsize>(bytes.size()));
  EXPECT_FALSE(lt::read_elf_info(write("cut", bytes.substr(0, 100)), info, error));
  EXPECT_EQ(error, "truncated program headers");
  // Cut right after the program headers (ELF64 little-endian host): readable, but the notes,
  // which follow the headers, are gone, so no build-id.
  ASSERT_GE(bytes.size(), 64u);
  const auto field = [&bytes](std::size_t at, int size) {
    std::uint64_t v = 0;
    for (int i = size - 1; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(bytes[at + static_cast<std::size_t>(i)]);
    return v;
  };
  const std::string head = bytes.substr(0, field(32, 8) + field(56, 2) * field(54, 2));
  ASSERT_TRUE(lt::read_elf_info(write("head", head), info, error)) << error;
  EXPECT_EQ(info.build_id, "");
}

// A hand-made ELF32 big-endian ARM file with one PT_NOTE holding a build-id: the 32-bit layout,
// the other byte order and the device addr2line.
TEST_F(SymbolizeTest, ElfInfoReadsElf32BigEndianArm) {
  std::string f(52 + 32 + 20, '\0');
  const auto put = [&f](std::size_t at, std::uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) f[at + static_cast<std::size_t>(i)] = static_cast<char>(v >> (8 * (bytes - 1 - i)));
  };
  f.replace(0, 4, "\x7f" "ELF");
  f[4] = 1;  // ELFCLASS32
  f[5] = 2;  // ELFDATA2MSB
  f[6] = 1;
  put(16, 2, 2);   // ET_EXEC
  put(18, 40, 2);  // EM_ARM
  put(28, 52, 4);  // e_phoff
  put(42, 32, 2);  // e_phentsize
  put(44, 1, 2);   // e_phnum
  put(52 + 0, 4, 4);   // PT_NOTE
  put(52 + 4, 84, 4);  // p_offset
  put(52 + 16, 20, 4); // p_filesz
  put(52 + 28, 4, 4);  // p_align
  put(84, 4, 4);       // namesz
  put(88, 4, 4);       // descsz
  put(92, 3, 4);       // NT_GNU_BUILD_ID
  f.replace(96, 4, std::string("GNU\0", 4));
  f.replace(100, 4, "\xde\xad\xbe\xef");
  lt::ElfInfo info;
  std::string error;
  ASSERT_TRUE(lt::read_elf_info(write("arm.elf", f), info, error)) << error;
  EXPECT_FALSE(info.is64);
  EXPECT_EQ(info.machine, 40);
  EXPECT_EQ(info.build_id, "deadbeef");
  EXPECT_STREQ(lt::addr2line_program(info.machine), "arm-none-eabi-addr2line");
}

TEST_F(SymbolizeTest, Addr2lineOutputParsesInlineChainsAndUnknowns) {
  std::vector<lt::SourceChain> chains;
  ASSERT_TRUE(lt::parse_addr2line_output("0x10\ninner()\n/a/x.cpp:3 (discriminator 2)\nouter()\n/a/x.cpp:9\n"
                                         "0x20\n??\n??:0\n0x30\nf\n/b/y.c:?\n",
                                         3, chains));
  ASSERT_EQ(chains[0].size(), 2u);
  EXPECT_EQ(chains[0][0].function, "inner()");
  EXPECT_EQ(chains[0][0].line, 3u);
  EXPECT_EQ(chains[0][1].file, "/a/x.cpp");
  EXPECT_TRUE(chains[1].empty());
  ASSERT_EQ(chains[2].size(), 1u);
  EXPECT_EQ(chains[2][0].file, "/b/y.c");
  EXPECT_EQ(chains[2][0].line, 0u);
  EXPECT_FALSE(lt::parse_addr2line_output("0x10\nf\n/a:1\n", 2, chains));  // one group short
  EXPECT_FALSE(lt::parse_addr2line_output("f\n/a:1\n", 1, chains));        // no address line
  EXPECT_FALSE(lt::parse_addr2line_output("0x10\nf\n", 1, chains));        // function without position
}

TEST_F(SymbolizeTest, StrippedBinaryFoundThroughGnuBuildIdLayout) {
  const std::string layout = dir_ + "/debug/.build-id/" + build_id_.substr(0, 2);
  fs::create_directories(layout);
  fs::copy_file(kDebug, layout + "/" + build_id_.substr(2) + ".debug");
  lt::Options options;
  options.paths = {write("in.jsonl", linux_record(kStripped, build_id_))};
  options.debug_dir = dir_ + "/debug";
  std::string out, err;
  ASSERT_EQ(run(options, out, err), 0) << err;
  expect_fixture_sources(sample_frames(out));
  EXPECT_NE(err.find("2 with file:line"), std::string::npos) << err;
}

TEST_F(SymbolizeTest, StrippedBinaryFoundInPlainDirectoryByItsNote) {
  fs::create_directories(dir_ + "/plain");
  fs::copy_file(kFixture, dir_ + "/plain/firmware-under-another-name");
  std::ofstream(dir_ + "/plain/README") << "not an ELF file\n";
  lt::Options options;
  // The module path is gone: only the build-id can find the file.
  options.paths = {write("in.jsonl", linux_record("/nonexistent/thermostat", build_id_))};
  options.debug_dir = dir_ + "/plain";
  std::string out, err;
  ASSERT_EQ(run(options, out, err), 0) << err;
  expect_fixture_sources(sample_frames(out));
}

TEST_F(SymbolizeTest, UnknownModuleLeavesTheRecordAsItWasAndSaysSo) {
  lt::Options options;
  const std::string record = linux_record("/nonexistent/thermostat", build_id_);
  options.paths = {write("in.jsonl", record)};
  std::string out, err;
  ASSERT_EQ(run(options, out, err), 0) << err;
  EXPECT_EQ(out, record);
  EXPECT_NE(err.find("no file for module /nonexistent/thermostat"), std::string::npos) << err;
  EXPECT_NE(err.find("2 without a file to read"), std::string::npos) << err;
}

TEST_F(SymbolizeTest, ModulePathWithAnotherBuildIdIsNotUsed) {
  lt::Options options;
  const std::string record = linux_record(kFixture, "00112233445566778899aabbccddeeff00112233");
  options.paths = {write("in.jsonl", record)};
  std::string out, err;
  ASSERT_EQ(run(options, out, err), 0) << err;
  EXPECT_EQ(out, record);
  // The same record with the fixture's own build-id: the module path is used.
  options.paths = {write("same.jsonl", linux_record(kFixture, build_id_))};
  ASSERT_EQ(run(options, out, err), 0) << err;
  expect_fixture_sources(sample_frames(out));
}

TEST_F(SymbolizeTest, DeviceRecordsThroughElfGainSymbols) {
  lt::Options options;
  options.paths = {write("device.jsonl", device_record())};
  options.elf = kFixture;
  std::string out, err;
  ASSERT_EQ(run(options, out, err), 0) << err;
  EXPECT_NE(out.find(",\"symbols\":{\"frames\":[{\"pc\":\"" + hex(inner_.address + inner_.size / 2) + "\""),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\"function\":\"fixture_inner(int)\",\"file\":"), std::string::npos) << out;
  EXPECT_NE(out.find("\"function\":\"fixture_outer(int)\",\"file\":"), std::string::npos) << out;
  // Still a record the reader accepts.
  lt::LogRecord record;
  lt::WarningKind kind{};
  std::string what;
  EXPECT_TRUE(lt::parse_record(out.data(), out.size() - 1, record, kind, what)) << what;
  // Without --elf: unchanged, with one warning naming the option.
  options.elf.clear();
  ASSERT_EQ(run(options, out, err), 0) << err;
  EXPECT_EQ(out, device_record());
  EXPECT_NE(err.find("need --elf FILE"), std::string::npos) << err;
}

// Many records, several PCs each: one addr2line process for the file, not one per address.
TEST_F(SymbolizeTest, OneAddr2lineRunPerFile) {
  const std::string bin = dir_ + "/bin";
  fs::create_directories(bin);
  const std::string counter = dir_ + "/runs";
  write("bin/addr2line", "#!/bin/sh\necho run >> '" + counter + "'\nexec /usr/bin/addr2line \"$@\"\n");
  fs::permissions(bin + "/addr2line", fs::perms::owner_all);
  std::string records;
  for (std::uint64_t d = 1; d <= 20; ++d) records += linux_record(kFixture, build_id_, d);
  lt::Options options;
  options.paths = {write("many.jsonl", records)};
  const char* old_path = std::getenv("PATH");
  const std::string saved = old_path != nullptr ? old_path : "";
  ::setenv("PATH", (bin + ":" + saved).c_str(), 1);
  std::string out, err;
  const int status = run(options, out, err);
  ::setenv("PATH", saved.c_str(), 1);
  ASSERT_EQ(status, 0) << err;
  std::ifstream runs(counter);
  std::string line;
  int count = 0;
  while (std::getline(runs, line)) ++count;
  EXPECT_EQ(count, 1);
  EXPECT_NE(err.find("40 with file:line"), std::string::npos) << err;
}

TEST_F(SymbolizeTest, OutputSymbolisedAgainIsUnchanged) {
  lt::Options options;
  options.paths = {write("in.jsonl", linux_record(kFixture, build_id_))};
  std::string once, twice, err;
  ASSERT_EQ(run(options, once, err), 0) << err;
  options.paths = {write("once.jsonl", once)};
  ASSERT_EQ(run(options, twice, err), 0) << err;
  EXPECT_EQ(twice, once);
}

TEST_F(SymbolizeTest, BadRecordsAreSkippedWithTheirWarningAndCounted) {
  lt::Options options;
  options.paths = {write("mixed.jsonl", "garbage\n" + linux_record(kFixture, build_id_) + "{\"report\":")};
  std::string out, err;
  ASSERT_EQ(run(options, out, err), 0) << err;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1);
  expect_fixture_sources(sample_frames(out));
  EXPECT_NE(err.find("mixed.jsonl:1:"), std::string::npos) << err;
  EXPECT_NE(err.find("mixed.jsonl:3:"), std::string::npos) << err;
}

// A binary capture of one device record: `decode --elf` symbolises it as symbolize does (the
// same code), `decode` alone writes it as it decoded it, and symbolize reads the capture too.
TEST_F(SymbolizeTest, DecodeWithElfSymbolisesACapture) {
  namespace t = lt::test;
  const std::uint64_t in = inner_.address + inner_.size / 2;
  const std::uint64_t out_pc = outer_.address + outer_.size / 2;
  t::BodySpec s;
  s.config = sizeof(void*) == 8 ? 1 : 0;
  s.strings.resize(3);
  s.top = {{false, in, 1}};
  s.samples = {{10, 0, {}, {static_cast<std::int64_t>(in), static_cast<std::int64_t>(out_pc)}}};
  const t::Bytes capture = t::make_packet(s);
  lt::Options options;
  options.command = "decode";
  options.paths = {write("device.lcb", std::string(capture.begin(), capture.end()))};
  options.elf = kFixture;
  std::ostringstream o, e;
  ASSERT_EQ(lt::run_decode(options, o, e), 0) << e.str();
  const std::string symbolised = o.str();
  EXPECT_NE(symbolised.find(",\"symbols\":{\"frames\":[{\"pc\":\"" + hex(in) + "\""), std::string::npos) << symbolised;
  expect_fixture_sources(sample_frames(symbolised));
  EXPECT_NE(e.str().find("1 capture: 1 packet decoded, 0 bytes skipped; 0 warnings"), std::string::npos) << e.str();
  EXPECT_NE(e.str().find("symbolize: 2 frames: 2 with file:line"), std::string::npos) << e.str();
  // The same output from symbolize.
  std::string out, err;
  ASSERT_EQ(run(options, out, err), 0) << err;
  EXPECT_EQ(out, symbolised);
  // decode without --elf: the record as decoded, no symbols, no call for --elf.
  options.elf.clear();
  std::ostringstream plain, plain_err;
  ASSERT_EQ(lt::run_decode(options, plain, plain_err), 0) << plain_err.str();
  const std::string decoded = plain.str();
  EXPECT_EQ(decoded.find("symbols"), std::string::npos) << decoded;
  EXPECT_EQ(plain_err.str().find("--elf"), std::string::npos) << plain_err.str();
  EXPECT_EQ(std::count(decoded.begin(), decoded.end(), '\n'), 1);
  EXPECT_EQ(decoded.substr(0, decoded.size() - 1),
            symbolised.substr(0, symbolised.find(",\"symbols\":")) + "}");
}

TEST_F(SymbolizeTest, ExitStatusForBadOptionsAndNothingReadable) {
  lt::Options options;
  options.paths = {write("in.jsonl", linux_record(kFixture, build_id_))};
  std::string out, err;
  options.elf = write("not-elf", "text\n");
  EXPECT_EQ(run(options, out, err), 2);
  EXPECT_NE(err.find("--elf "), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  options.elf.clear();
  options.debug_dir = dir_ + "/missing";
  EXPECT_EQ(run(options, out, err), 2);
  EXPECT_NE(err.find("--debug-dir "), std::string::npos) << err;
  options.debug_dir.clear();
  options.paths = {write("garbage.jsonl", "garbage\n")};
  EXPECT_EQ(run(options, out, err), 1);
  EXPECT_EQ(out, "");
}

}  // namespace
