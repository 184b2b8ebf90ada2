// SPDX-License-Identifier: MIT
// The documents state the present (test docs.present): README.md and docs/*.md must not narrate
// history, which git log holds. Fails on, in any case:
//   - a commit hash: 7 to 40 hex digits alone in backticks, or after the word "commit(s)";
//   - "earlier" as a word (or the start of one);
//   - "brief" as a word or the start of one ("BRIEF.md", "briefly");
//   - "weakness" followed by a number ("weakness 8", "weaknesses 2");
//   - "session" as a word or the start of one.
// Usage: loopcanary_docs_present_check SOURCE_DIR. Prints every hit as file:line: what "text",
// and exits with 1 when there is one (2 when no document was found).
#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Rule {
  const char* what;
  std::regex pattern;
};

std::vector<Rule> rules() {
  const auto flags = std::regex::ECMAScript | std::regex::icase;
  return {
      {"a commit hash in backticks", std::regex("`[0-9a-f]{7,40}`", flags)},
      {"a commit hash after the word commit", std::regex("\\bcommits?\\s+`?[0-9a-f]{7,40}\\b", flags)},
      {"the word 'earlier'", std::regex("\\bearlier", flags)},
      {"the word 'brief'", std::regex("\\bbrief", flags)},
      {"'weakness' and a number", std::regex("\\bweakness(es)?\\s*#?\\s*[0-9]", flags)},
      {"the word 'session'", std::regex("\\bsession", flags)},
  };
}

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " SOURCE_DIR\n";
    return 2;
  }
  const std::filesystem::path root = argv[1];
  std::vector<std::filesystem::path> documents;
  if (std::filesystem::is_regular_file(root / "README.md")) documents.push_back("README.md");
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(root / "docs", error)) {
    if (entry.is_regular_file() && entry.path().extension() == ".md") {
      documents.push_back(std::filesystem::path("docs") / entry.path().filename());
    }
  }
  std::sort(documents.begin(), documents.end());
  if (documents.size() < 2) {
    std::cerr << root.string() << ": README.md and docs/*.md not found\n";
    return 2;
  }

  const std::vector<Rule> all = rules();
  std::size_t hits = 0;
  for (const auto& document : documents) {
    const std::string text = read(root / document);
    struct Hit {
      std::ptrdiff_t at;
      const char* what;
      std::string found;
    };
    std::vector<Hit> found;
    for (const Rule& rule : all) {
      for (auto it = std::sregex_iterator(text.begin(), text.end(), rule.pattern); it != std::sregex_iterator();
           ++it) {
        std::string match = it->str(0);
        std::replace(match.begin(), match.end(), '\n', ' ');
        found.push_back({it->position(0), rule.what, match});
      }
    }
    std::stable_sort(found.begin(), found.end(), [](const Hit& a, const Hit& b) { return a.at < b.at; });
    for (const Hit& hit : found) {
      const auto line = 1 + std::count(text.begin(), text.begin() + hit.at, '\n');
      std::cout << document.generic_string() << ':' << line << ": " << hit.what << ": \"" << hit.found << "\"\n";
    }
    hits += found.size();
  }
  if (hits != 0) {
    std::cout << hits << " mention(s) of history in " << documents.size()
              << " documents: state what is true now and how to reproduce it; git log holds the rest\n";
    return 1;
  }
  std::cout << documents.size() << " documents state the present\n";
  return 0;
}
