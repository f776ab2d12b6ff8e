// Output files as checkpoints have always been written: the bytes go to `<path>.tmp.<pid>`,
// every write and the close are checked, the file is fsync'd and renamed over `path`, and the
// folder is fsync'd so the rename survives a crash. A reader never sees half a file, and a
// failed write (a full disk, a file-size limit) leaves the previous file whole and raises an
// error with the OS's reason. Every file ringdp writes goes through here.
#pragma once

#include <string>

namespace ringdp {

/// Replaces `path` with `bytes` atomically. `what` names the file in errors ("--csv", "checkpoint").
/// Temporaries `<path>.tmp.<pid>` left by writers that died (no such process on this host) are
/// removed first; a live writer's are left alone. A path that exists and is not a regular file
/// (a pipe, /dev/stdout, /dev/full) is written in place, with the same checks. A symbolic link is
/// written through: the file at the end of its chain is replaced (made if missing) and the link
/// stays. A file replaced keeps its permission bits; a new one gets 0666 less the umask.
void write_file_atomically(const std::string& path, const std::string& bytes, const std::string& what);

/// Where write_file_atomically puts the bytes of `path`: `path` itself, or for a symbolic link
/// the path at the end of its chain of links (relative targets read from each link's folder).
/// Throws an Error naming `path` for a chain of more than 40 links (a loop).
std::string written_path(const std::string& path);

/// Why no file can be created at `path` for want of its folder ("the folder 'out' does not exist
/// (...); create it first"), or "" when the folder is there and writable. Checked at start-up, so
/// that a run finds out before its work is done rather than after.
std::string output_folder_problem(const std::string& path);
/// output_folder_problem's answer, or first that `path` is itself a folder: what an option naming
/// an output file checks at start-up (--csv pointed at a folder failed only after the sweep).
std::string output_file_problem(const std::string& path);
/// Throws "<what> '<path>': <the problem>" when output_folder_problem has one.
void require_output_folder(const std::string& path, const std::string& what);

/// Removes `<path>.tmp.<pid>` files whose process is gone; returns how many it removed.
int remove_orphaned_temporaries(const std::string& path);

}  // namespace ringdp
