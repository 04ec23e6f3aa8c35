#include "trace/safe_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

namespace cutrace {

int open_regular(const char* path, unsigned opts, struct stat* out) {
  int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
  if (opts & kSafeNoFollow) flags |= O_NOFOLLOW;
  int fd = ::open(path, flags);
  if (fd < 0) return -1;
  struct stat st {};
  int err = 0;
  if (fstat(fd, &st) != 0) err = errno;
  else if (!S_ISREG(st.st_mode)) err = EINVAL;
  else if ((opts & kSafeOwnUser) && st.st_uid != geteuid() && st.st_uid != 0) err = EPERM;
  if (err) {
    ::close(fd);
    errno = err;
    return -1;
  }
  // Reads of a regular file never block; clear the flag so the fd behaves as a plain open's.
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  if (out) *out = st;
  return fd;
}

const char* open_regular_error(int err) {
  switch (err) {
    case EINVAL:
    case ENXIO: return "not a regular file";  // ENXIO: open() of a socket
    case ELOOP: return "a symbolic link";
    case EPERM: return "owned by another user";
    default: return strerror(err);
  }
}

}  // namespace cutrace
