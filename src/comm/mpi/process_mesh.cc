#include "comm/mpi/process_mesh.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "comm/mpi/mesh_hooks.h"
#include "comm/mpi/mesh_join.h"
#include "comm/mpi/mesh_socket.h"
#include "core/log.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

constexpr auto kAnnounceWait = std::chrono::seconds(2);
constexpr auto kLastWordsWait = std::chrono::seconds(1);
constexpr auto kStopWait = std::chrono::seconds(2);
constexpr auto kGaveUpWait = std::chrono::seconds(2);

std::mutex g_join_mu;
std::atomic<ProcessMesh*> g_mesh{nullptr};  // made once, never destroyed

void call_handler(const std::function<void()>& call) {
  try {
    call();
  } catch (const std::exception& e) {
    logging::log(LogLevel::kWarning, str_cat("a handler of the process mesh raised (ignored): ", e.what()));
  } catch (...) {
    logging::log(LogLevel::kWarning, "a handler of the process mesh raised (ignored)");
  }
}

}  // namespace

namespace {

// One sender at a time on a stream, waited for until a deadline (a
// timed_mutex would do, but ThreadSanitizer misreads its timed lock).
class SendGate {
 public:
  bool enter_until(MeshClock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!free_.wait_until(lock, deadline, [&] { return !busy_; })) return false;
    busy_ = true;
    return true;
  }
  void leave() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_ = false;
    }
    free_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable free_;
  bool busy_ = false;  // guarded by mu_
};

}  // namespace

struct ProcessMesh::State {
  struct Peer {
    explicit Peer(MeshConnection connection) : fd(connection.fd), name(connection.name), reader(std::move(connection.reader)) {}
    const int fd;            // -1 for this process; never closed while the process runs (no reuse)
    const std::string name;  // "process 1 (host vm, pid 42)"
    SendGate sending;
    // The mesh thread's alone:
    FrameReader reader;
    // Guarded by mu:
    bool open = true;
    std::string dropped_because;  // why this process stopped writing to it
  };

  int rank = 0;
  std::vector<std::unique_ptr<Peer>> peers;  // by rank
  int epoll_fd = -1;
  int wake_fd = -1;
  std::thread thread;
  std::atomic<std::thread::id> thread_id{};
  std::atomic<bool> stopping{false};
  std::atomic<bool> said_last_words{false};
  std::mutex stopped_mu;
  std::condition_variable stopped_cv;
  bool stopped = false;  // guarded by stopped_mu

  std::recursive_mutex delivery_mu;
  mutable std::mutex mu;
  Handlers handlers;                    // guarded by mu
  std::map<int, std::string> dead;      // guarded by mu
  std::map<int, std::string> finished;  // the goodbyes heard; guarded by mu
  std::set<int> told;                   // deaths and goodbyes the current handlers heard of; guarded by mu
  std::deque<DeviceNews> unheard_news;  // while no device_news handler; guarded by mu
  std::string gave_up_because;          // guarded by mu
  bool listening = true;                // the thread runs; guarded by mu
  std::condition_variable ended_cv;     // a peer finished or died, or the thread ended (mu)

  void run();
  void on_readable(int q);
  void on_frame(int q, const MeshFrame& frame);
  void on_end(int q, const std::string& error);
  void on_goodbye(int q);
  void on_death(int q, const std::string& reason);
  void deliver_end(int q);
  void deliver_news(const DeviceNews& news);
  void stop_watching(int q);
  void send_to_all(const std::string& bytes, MeshClock::duration wait);
  bool every_peer_ended_locked() const;
  std::string unfinished_peers_locked() const;
  void wait_for_peers_at_exit();
  void stop_thread();
};

ProcessMesh::ProcessMesh(std::unique_ptr<State> state) : state_(std::move(state)) {}

ProcessMesh* ProcessMesh::joined() { return g_mesh.load(std::memory_order_acquire); }

ProcessMesh& ProcessMesh::join(const MpiWorld& world) {
  std::lock_guard<std::mutex> lock(g_join_mu);
  if (ProcessMesh* mesh = joined()) return *mesh;
  std::vector<MeshConnection> connections = connect_mesh(world);

  auto state = std::make_unique<State>();
  state->rank = world.rank();
  state->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  state->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (state->epoll_fd < 0 || state->wake_fd < 0) {
    const int error = errno;
    // Closed, the streams tell the peers that this process is out.
    for (const MeshConnection& c : connections) {
      if (c.fd >= 0) close(c.fd);
    }
    for (int fd : {state->epoll_fd, state->wake_fd}) {
      if (fd >= 0) close(fd);
    }
    throw_error<CollectiveError>("ordo's process mesh cannot make its epoll or eventfd: ", std::strerror(error));
  }
  epoll_event wake{EPOLLIN, {}};
  wake.data.u32 = static_cast<uint32_t>(connections.size());
  epoll_ctl(state->epoll_fd, EPOLL_CTL_ADD, state->wake_fd, &wake);
  for (size_t q = 0; q < connections.size(); ++q) {
    state->peers.push_back(std::make_unique<State::Peer>(std::move(connections[q])));
    if (state->peers.back()->fd < 0) continue;
    epoll_event event{EPOLLIN | EPOLLRDHUP, {}};
    event.data.u32 = static_cast<uint32_t>(q);
    epoll_ctl(state->epoll_fd, EPOLL_CTL_ADD, state->peers.back()->fd, &event);
  }
  auto* mesh = new ProcessMesh(std::move(state));
  install_mesh_hooks(world);
  State* s = mesh->state_.get();
  s->thread = std::thread([s] { s->run(); });
  g_mesh.store(mesh, std::memory_order_release);
  return *mesh;
}

void ProcessMesh::State::run() {
  thread_id.store(std::this_thread::get_id());
  epoll_event events[64];
  while (!stopping.load()) {
    const int ready = epoll_wait(epoll_fd, events, 64, -1);
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < ready && !stopping.load(); ++i) {
      const uint32_t q = events[i].data.u32;
      if (q == peers.size()) continue;  // woken to stop
      on_readable(static_cast<int>(q));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    listening = false;
  }
  ended_cv.notify_all();
  std::lock_guard<std::mutex> lock(stopped_mu);
  stopped = true;
  stopped_cv.notify_all();
}

void ProcessMesh::State::on_readable(int q) {
  Peer& peer = *peers[static_cast<size_t>(q)];
  std::string bytes, error;
  const bool still_open = read_available(peer.fd, bytes, error);
  if (!bytes.empty()) {
    peer.reader.append(bytes.data(), bytes.size());
    try {
      while (std::optional<MeshFrame> frame = peer.reader.next()) on_frame(q, *frame);
    } catch (const CollectiveError& e) {
      stop_watching(q);
      on_death(q, str_cat(peer.name, " is taken for dead: ", e.what()));
      return;
    }
  }
  if (!still_open) on_end(q, error);
}

void ProcessMesh::State::on_frame(int q, const MeshFrame& frame) {
  Peer& peer = *peers[static_cast<size_t>(q)];
  switch (frame.kind) {
    case FrameKind::kHello:
      throw_error<CollectiveError>("a message from ", peer.name, " on ordo's process mesh is malformed (a second hello)");
    case FrameKind::kGoodbye:
      return on_goodbye(q);
    case FrameKind::kLastWords:
      on_death(q, str_cat(peer.name, " ", frame.words));
      return;
    case FrameKind::kDeviceNews:
      if (frame.news.kind == DeviceNews::Kind::kFailed) {
        std::lock_guard<std::mutex> lock(mu);
        record_failure_for_sigterm(str_cat("device ", frame.news.device, " of ", peer.name, " failed: ",
                                           frame.news.reason));
      }
      deliver_news(frame.news);
      return;
  }
}

void ProcessMesh::State::on_end(int q, const std::string& error) {
  Peer& peer = *peers[static_cast<size_t>(q)];
  stop_watching(q);
  std::string dropped_because;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (finished.count(q)) return;  // its goodbye came first
    dropped_because = peer.dropped_because;
  }
  if (!dropped_because.empty()) {
    on_death(q, str_cat(peer.name, " is taken for dead: it took no message from this process (", dropped_because, ")"));
  } else if (error.empty()) {
    on_death(q, str_cat(peer.name, " died: its connection closed without a goodbye"));
  } else {
    on_death(q, str_cat(peer.name, " is lost: its connection failed (", error,
                        "): it died, or its host or the network to it failed"));
  }
}

void ProcessMesh::State::stop_watching(int q) {
  Peer& peer = *peers[static_cast<size_t>(q)];
  epoll_ctl(epoll_fd, EPOLL_CTL_DEL, peer.fd, nullptr);
  shutdown(peer.fd, SHUT_RDWR);
  std::lock_guard<std::mutex> lock(mu);
  peer.open = false;
}

void ProcessMesh::State::on_goodbye(int q) {
  {
    std::lock_guard<std::mutex> lock(mu);
    finished.emplace(q, str_cat(peers[static_cast<size_t>(q)]->name, " finished its program"));
  }
  ended_cv.notify_all();
  deliver_end(q);
}

void ProcessMesh::State::on_death(int q, const std::string& reason) {
  if (stopping.load()) return;  // exiting: peers closing their ends are no news
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!dead.emplace(q, reason).second) return;
    record_failure_for_sigterm(reason);
  }
  ended_cv.notify_all();
  MpiWorld::record_peer_failure(reason);
  deliver_end(q);
}

// A process ends once: a goodbye, or a death (its stream's end after a
// goodbye is no news).
void ProcessMesh::State::deliver_end(int q) {
  std::lock_guard<std::recursive_mutex> delivery(delivery_mu);
  std::function<void(int, const std::string&)> handler;
  std::string reason;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!told.insert(q).second) return;  // set_handlers replayed it
    const auto death = dead.find(q);
    const bool died = death != dead.end();
    handler = died ? handlers.process_died : handlers.process_finished;
    reason = died ? death->second : finished.at(q);
  }
  if (handler) call_handler([&] { handler(q, reason); });
}

void ProcessMesh::State::deliver_news(const DeviceNews& news) {
  std::lock_guard<std::recursive_mutex> delivery(delivery_mu);
  std::function<void(const DeviceNews&)> device_news;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!handlers.device_news) {
      unheard_news.push_back(news);
      return;
    }
    device_news = handlers.device_news;
  }
  call_handler([&] { device_news(news); });
}

void ProcessMesh::set_handlers(Handlers handlers) {
  State& s = *state_;
  std::lock_guard<std::recursive_mutex> delivery(s.delivery_mu);
  std::map<int, std::string> dead, finished;
  std::deque<DeviceNews> news;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.handlers = handlers;
    dead = s.dead;
    finished = s.finished;
    s.told.clear();
    for (const auto& [q, reason] : dead) s.told.insert(q);
    for (const auto& [q, reason] : finished) s.told.insert(q);
    if (handlers.device_news) news.swap(s.unheard_news);
  }
  for (const auto& [q, reason] : dead) {
    if (handlers.process_died) call_handler([&] { handlers.process_died(q, reason); });
  }
  for (const auto& [q, reason] : finished) {
    if (handlers.process_finished && !dead.count(q)) call_handler([&] { handlers.process_finished(q, reason); });
  }
  for (const DeviceNews& n : news) call_handler([&] { handlers.device_news(n); });
}

void ProcessMesh::State::send_to_all(const std::string& bytes, MeshClock::duration wait) {
  const MeshClock::time_point deadline = MeshClock::now() + wait;
  for (size_t q = 0; q < peers.size(); ++q) {
    Peer& peer = *peers[q];
    if (peer.fd < 0) continue;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!peer.open || !peer.dropped_because.empty()) continue;
    }
    // Another sender holding it this long is stuck on this peer itself,
    // and drops it when its own wait ends.
    if (!peer.sending.enter_until(deadline)) continue;
    const std::string failure = send_all(peer.fd, bytes, deadline);
    peer.sending.leave();
    if (failure.empty()) continue;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (peer.dropped_because.empty()) peer.dropped_because = failure;
    }
    // The mesh thread then reads the end and reports it.
    shutdown(peer.fd, SHUT_RDWR);
  }
}

void ProcessMesh::announce(const DeviceNews& news) {
  state_->send_to_all(encode_frame(MeshFrame::device_news(news)), kAnnounceWait);
}

void ProcessMesh::say_last_words(const std::string& why) {
  State& s = *state_;
  if (s.said_last_words.exchange(true)) return;
  MpiWorld::record_peer_failure(str_cat("it is ending on an error (", why, "), and its peers stop taking part"));
  s.send_to_all(encode_frame(MeshFrame::last_words(why)), kLastWordsWait);
}

void ProcessMesh::gave_up(const std::string& why) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->gave_up_because.empty()) state_->gave_up_because = why;
}

std::map<int, std::string> ProcessMesh::dead_processes() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->dead;
}

// Whether MPI_Finalize's fence can complete, or is skipped anyway: every
// peer said goodbye, or one died (mu held).
bool ProcessMesh::State::every_peer_ended_locked() const {
  if (!dead.empty() || !listening) return true;
  for (size_t q = 0; q < peers.size(); ++q) {
    if (static_cast<int>(q) != rank && !finished.count(static_cast<int>(q))) return false;
  }
  return true;
}

std::string ProcessMesh::State::unfinished_peers_locked() const {
  std::string names;
  for (size_t q = 0; q < peers.size(); ++q) {
    if (static_cast<int>(q) == rank || finished.count(static_cast<int>(q))) continue;
    names += str_cat(names.empty() ? "" : ", ", peers[q]->name);
  }
  return names;
}

void ProcessMesh::State::wait_for_peers_at_exit() {
  if (thread_id.load() == std::this_thread::get_id()) return;  // exit() from a handler: nobody listens
  std::unique_lock<std::mutex> lock(mu);
  const auto ended = [&] { return every_peer_ended_locked(); };
  if (gave_up_because.empty()) return ended_cv.wait(lock, ended);
  if (ended_cv.wait_for(lock, kGaveUpWait, ended)) return;
  const std::string reason = str_cat("it gave up on a collective (", gave_up_because, "), and ",
                                     unfinished_peers_locked(), " had not finished within 2 s");
  lock.unlock();
  MpiWorld::record_peer_failure(reason);
}

void ProcessMesh::State::stop_thread() {
  stopping.store(true);
  const uint64_t one = 1;
  if (write(wake_fd, &one, sizeof(one)) < 0) return;
  if (thread_id.load() == std::this_thread::get_id()) {
    thread.detach();  // exit() was called by a handler: the loop ends when it returns
    return;
  }
  std::unique_lock<std::mutex> lock(stopped_mu);
  if (stopped_cv.wait_for(lock, kStopWait, [&] { return stopped; })) {
    lock.unlock();
    thread.join();
  } else {
    thread.detach();  // stuck in a handler: exit proceeds without it
  }
}

// At exit (an atexit hook that runs before MPI_Finalize's, being
// registered after it): a goodbye to every peer, the wait for theirs (see
// the header), then the thread ends, so that nothing of the mesh runs
// while statics are destroyed.
void say_goodbye_at_exit() {
  ProcessMesh* mesh = ProcessMesh::joined();
  if (mesh == nullptr) return;
  ProcessMesh::State& s = *mesh->state_;
  if (!s.said_last_words.load()) {  // after last words, MPI_Finalize is skipped: nothing to wait for
    s.send_to_all(encode_frame(MeshFrame::goodbye()), kLastWordsWait);
    s.wait_for_peers_at_exit();
  }
  s.stop_thread();
  for (const auto& peer : s.peers) {
    if (peer->fd >= 0) shutdown(peer->fd, SHUT_WR);
  }
}

}  // namespace ordo::comm
