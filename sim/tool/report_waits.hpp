// SPDX-License-Identifier: MIT
// The waits section of `loopcanary report` (docs/tool.md, "report"): the objects the blocks'
// loop threads waited on, grouped across blocks by object and holder (their one description,
// wait_text()), each with the blocks that waited on it, their samples and share. Host code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "model.hpp"

namespace loopcanary::tool {

class WaitTally {
 public:
  /// Counts every wait object of the block's representative report.
  void add(const Block& block);
  /// Blocks that waited on an object (at least one wait object).
  std::uint64_t blocks() const noexcept { return blocks_; }
  /// "waits by object and holder: ..." and one entry per object, most samples first; nothing
  /// when no block waited.
  void write_text(std::ostream& out) const;
  /// The "waits" member of report's JSON: {"objects_total":N,"blocks":B,"waits_overflowed":O,
  /// "objects":[...]}, most samples first (docs/schema/report.schema.json).
  void write_json(std::ostream& out) const;

 private:
  struct Waited {
    std::string block;          // its block ID
    std::uint64_t samples = 0;  // samples that named the object
    std::uint64_t of = 0;       // samples taken in the block
  };
  struct Object {
    WaitEntry entry;            // the first reading (its holder's stack not kept)
    std::uint64_t samples = 0;  // over every block
    std::vector<Waited> waited;  // up to kMaxBlocks, in input order
    std::uint64_t waited_other = 0;  // blocks beyond them
  };
  std::vector<const Object*> sorted() const;
  std::map<std::string, Object> objects_;  // by wait_text()
  std::uint64_t blocks_ = 0;
  std::uint64_t overflowed_ = 0;           // blocks' objects beyond kMaxObjects, not listed
};

}  // namespace loopcanary::tool
