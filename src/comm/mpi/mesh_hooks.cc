#include "comm/mpi/mesh_hooks.h"

#include <cxxabi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>

#include "comm/mpi/process_mesh.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

// What the SIGTERM handler writes: the head, then " no failure" or ": "
// and the failures (deaths, and peers' device failures: a process that
// named a peer's error must not then say it saw none). Static storage, never freed, written before it is
// published (g_sigterm_failures_length, release; the handler acquires).
char g_sigterm_head[512];
size_t g_sigterm_head_length = 0;
char g_sigterm_failures[3072];  // with the head, under PIPE_BUF: one atomic write to mpirun's pipe
std::atomic<size_t> g_sigterm_failures_length{0};
static_assert(std::atomic<size_t>::is_always_lock_free, "read from a signal handler");

std::terminate_handler g_previous_terminate = nullptr;

void write_all(const char* bytes, size_t size) {
  while (size > 0) {
    const ssize_t written = write(STDERR_FILENO, bytes, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;
    bytes += written;
    size -= static_cast<size_t>(written);
  }
}

// Appends size bytes at line[at], a byte at a time (no library call in
// the handler); returns the new end.
size_t append(char* line, size_t at, const char* bytes, size_t size) {
  for (size_t i = 0; i < size; ++i) line[at++] = bytes[i];
  return at;
}

// One write of the whole line, so that mpirun never forwards it cut by
// another process's output.
void on_sigterm(int) {
  static const char kNone[] = " no failure of its peers (mpirun itself was signalled, or a process ended "
                              "outside ordo)\n";
  char line[sizeof(g_sigterm_head) + sizeof(g_sigterm_failures) + sizeof(kNone)];
  size_t at = append(line, 0, g_sigterm_head, g_sigterm_head_length);
  const size_t failures = g_sigterm_failures_length.load(std::memory_order_acquire);
  if (failures == 0) {
    at = append(line, at, kNone, sizeof(kNone) - 1);
  } else {
    at = append(line, at, ": ", 2);
    at = append(line, at, g_sigterm_failures, failures);
    at = append(line, at, "\n", 1);
  }
  write_all(line, at);
  _exit(128 + SIGTERM);  // never MPI_Finalize: it fences with the dead
}

std::string demangled(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> text(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && text ? std::string(text.get()) : std::string(name);
}

// Why the process is terminating: the exception in flight, if any.
std::string terminate_reason() {
  const std::exception_ptr exception = std::current_exception();
  if (!exception) return "called std::terminate";
  const std::type_info* type = abi::__cxa_current_exception_type();
  const std::string type_name = type ? demangled(type->name()) : "an exception";
  try {
    std::rethrow_exception(exception);
  } catch (const std::exception& e) {
    return str_cat("raised ", type_name, ": ", e.what());
  } catch (...) {
    return str_cat("raised ", type_name);
  }
}

void terminate_with_last_words() {
  if (ProcessMesh* mesh = ProcessMesh::joined()) {
    try {
      mesh->say_last_words(terminate_reason());
    } catch (...) {
      // Terminating anyway: the peers see the death without the cause.
    }
  }
  if (g_previous_terminate != nullptr) g_previous_terminate();
  std::abort();
}

}  // namespace

void record_failure_for_sigterm(const std::string& reason) {
  size_t length = g_sigterm_failures_length.load(std::memory_order_relaxed);
  const std::string text = length == 0 ? reason : "; " + reason;
  const size_t copied = std::min(text.size(), sizeof(g_sigterm_failures) - length);
  std::memcpy(g_sigterm_failures + length, text.data(), copied);
  g_sigterm_failures_length.store(length + copied, std::memory_order_release);
}

void install_mesh_hooks(const MpiWorld& world) {
  const std::string head = str_cat("ordo: process ", world.rank(), " (host ", world.host_name(world.rank()),
                                   "): stopped by SIGTERM, as mpirun ends a job; ordo saw");
  g_sigterm_head_length = std::min(head.size(), sizeof(g_sigterm_head));
  std::memcpy(g_sigterm_head, head.data(), g_sigterm_head_length);
  struct sigaction current {};
  if (sigaction(SIGTERM, nullptr, &current) == 0 && !(current.sa_flags & SA_SIGINFO) &&
      current.sa_handler == SIG_DFL) {
    struct sigaction handler {};
    handler.sa_handler = on_sigterm;
    sigemptyset(&handler.sa_mask);
    sigaction(SIGTERM, &handler, nullptr);
  }
  g_previous_terminate = std::set_terminate(terminate_with_last_words);
  // Registered after MpiWorld's MPI_Finalize hook, so it runs before it.
  std::atexit(say_goodbye_at_exit);
}

}  // namespace ordo::comm
