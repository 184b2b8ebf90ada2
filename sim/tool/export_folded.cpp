// SPDX-License-Identifier: MIT
// `loopcanary export --format folded`: one line per distinct stack, root first, frames joined by
// ';', then a space and the number of samples with that stack (record_stacks(): every sample of
// each block, by its stack table; the input of flamegraph.pl, inferno and speedscope). Memory:
// one counter per distinct stack.
#include <ostream>
#include <string>

#include "export.hpp"

namespace loopcanary::tool::exporting {
namespace {

class FoldedWriter final : public Writer {
 public:
  explicit FoldedWriter(std::ostream& out) : out_(out) {}

  void add(const Block& block) override {
    const LogRecord& r = block.record;
    const std::vector<CountedStack> stacks = record_stacks(r);
    if (stacks.empty()) {
      ++blocks_without_samples_;
      return;
    }
    ++blocks_;
    if (!r.top_stacks) overwritten_ += r.samples_overwritten;
    for (const CountedStack& s : stacks) {
      root_first_labels(s.stack, labels_);
      key_.clear();
      for (std::size_t i = 0; i < labels_.size(); ++i) {
        if (i != 0) key_.push_back(';');
        key_ += labels_[i];
      }
      counts_[key_] += s.samples;
      samples_ += s.samples;
    }
  }

  void finish(const ReadStats&, const BlockStats&) override {
    for (const auto& [stack, count] : counts_) out_ << stack << ' ' << count << '\n';
  }

  std::string summary() const override {
    return std::to_string(counts_.size()) + " distinct stacks, " + std::to_string(samples_) + " samples of " +
           std::to_string(blocks_) + " blocks; " + std::to_string(blocks_without_samples_) +
           " blocks without samples and " + std::to_string(overwritten_) +
           " samples overwritten before their report (records without a stack table) are not in it";
  }

 private:
  std::ostream& out_;
  std::map<std::string, std::uint64_t> counts_;  // sorted: the same input gives the same file
  std::vector<std::string> labels_;
  std::string key_;
  std::uint64_t samples_ = 0;
  std::uint64_t blocks_ = 0;
  std::uint64_t blocks_without_samples_ = 0;
  std::uint64_t overwritten_ = 0;
};

}  // namespace

std::unique_ptr<Writer> make_folded_writer(std::ostream& out) { return std::make_unique<FoldedWriter>(out); }

}  // namespace loopcanary::tool::exporting
