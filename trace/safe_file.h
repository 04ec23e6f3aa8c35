// Opening a file whose name comes from a directory or a trace so that it cannot block or be
// redirected: a FIFO or device opens without waiting (O_NONBLOCK) and is refused after fstat,
// as is anything but a regular file. Used by the collector (its control file), the reader and
// the tools (module paths from a trace). Allocation-free, safe on the collector thread.
#pragma once
#include <sys/stat.h>

namespace cutrace {

enum SafeOpen : unsigned {
  kSafeNoFollow = 1u,  // a symbolic link as the last component is refused (ELOOP)
  kSafeOwnUser = 2u,   // the file must belong to the effective uid (or root)
};

// fd of `path` opened O_RDONLY|O_CLOEXEC, or -1 with errno set: the open's own error, ELOOP for
// a refused symlink, EINVAL for a file that is not regular (FIFO, socket, device, directory),
// EPERM for another user's file under kSafeOwnUser. *st (if given) receives fstat's answer.
int open_regular(const char* path, unsigned opts = 0, struct stat* st = nullptr);

// Why open_regular failed, for a message: "not a regular file", "a symbolic link", "owned by
// another user" or strerror(err).
const char* open_regular_error(int err);

}  // namespace cutrace
