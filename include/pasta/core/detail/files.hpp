// File-system helpers on POSIX calls (cheaper to compile than
// <filesystem>): create a directory tree, list one, replace a file atomically.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace pasta::detail {

inline std::string join_path(std::string_view dir, std::string_view file) {
  if (dir.empty()) return std::string(file);
  std::string p(dir);
  if (p.back() != '/') p += '/';
  return p.append(file);
}

inline std::string parent_dir(std::string_view path) {
  const auto slash = path.rfind('/');
  if (slash == std::string_view::npos) return {};
  return std::string(path.substr(0, slash == 0 ? 1 : slash));
}

inline bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// mkdir -p. Returns an empty string or the reason it failed.
inline std::string make_dirs(const std::string& path) {
  if (path.empty() || is_directory(path)) return {};
  for (std::size_t pos = 1; pos != std::string::npos;) {
    pos = path.find('/', pos);
    const std::string prefix = path.substr(0, pos);
    if (!prefix.empty() && ::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST)
      return std::strerror(errno);
    if (pos != std::string::npos) ++pos;
  }
  return is_directory(path) ? std::string() : std::string("not a directory");
}

// Writes `content` to `path` through a temporary file and a rename, so a
// reader never sees half a file. Returns an empty string or the reason.
inline std::string write_file(const std::string& path, std::string_view content) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return "cannot create " + tmp + ": " + std::strerror(errno);
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(n < 0 ? errno : ENOSPC);
      ::close(fd);
      ::unlink(tmp.c_str());
      return "writing " + tmp + " failed: " + why;
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return "writing " + tmp + " failed: " + why;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return "cannot rename " + tmp + " to " + path + ": " + why;
  }
  return {};
}

// The names in a directory, "." and ".." left out; empty if it cannot be read.
inline std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> names;
  DIR* d = ::opendir(path.c_str());
  if (!d) return names;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name(e->d_name);
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(d);
  return names;
}

// The whole file, or an empty string if it cannot be read.
inline std::string read_file(const std::string& path) {
  std::string out;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  std::fclose(f);
  return out;
}

}  // namespace pasta::detail
