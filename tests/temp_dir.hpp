// SPDX-License-Identifier: MIT
// A fresh private directory for a host test, removed with everything in it at destruction.
// Shared by the Linux port's and the tool's tests.
#pragma once

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace loopcanary::test {

class TempDir {
 public:
  /// mkdtemp under $TMPDIR (or /tmp), named `<prefix>.XXXXXX`. path() is empty if it failed.
  explicit TempDir(const char* prefix = "loopcanary-test") {
    const char* base = std::getenv("TMPDIR");
    const std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/" + prefix + ".XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()) != nullptr) path_ = buffer.data();
  }
  ~TempDir() {
    if (!path_.empty()) remove_tree(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  /// The path of `name` in the directory.
  std::string sub(const std::string& name) const { return path_ + "/" + name; }
  /// Writes `content` to `name` in the directory; returns its path.
  std::string write(const std::string& name, const std::string& content) const {
    const std::string file = sub(name);
    std::ofstream(file, std::ios::binary) << content;
    return file;
  }

  /// Removes `path` and everything under it, also where a test took away the owner's rights.
  static void remove_tree(const std::string& path) {
    chmod(path.c_str(), 0700);
    if (DIR* dir = opendir(path.c_str())) {
      while (const dirent* e = readdir(dir)) {
        const std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        const std::string full = path + "/" + name;
        struct stat st {};
        if (lstat(full.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
          remove_tree(full);
        } else {
          unlink(full.c_str());
        }
      }
      closedir(dir);
    }
    rmdir(path.c_str());
  }

 private:
  std::string path_;
};

}  // namespace loopcanary::test
