#include "comm/simulated/sim_network.h"

#include <cstring>
#include <thread>

#include "core/check.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

// What a waiter still waits for a gone peer's messages: a dead process's
// untaken messages are dropped or made takeable before the news goes out,
// so a little is enough, and a sweep of many deaths stays fast.
constexpr auto kSimulatedGoneGrace = std::chrono::milliseconds(2);

std::string process_name(int process) { return str_cat("process ", process, " (simulated)"); }

void pack(const std::byte* base, const Region& region, std::string& out) {
  out.resize(region.bytes());
  for (size_t row = 0; row < region.count; ++row) {
    std::memcpy(out.data() + row * region.block, base + region.offset + row * region.stride, region.block);
  }
}

void unpack(const std::string& bytes, std::byte* base, const Region& region) {
  for (size_t row = 0; row < region.count; ++row) {
    std::memcpy(base + region.offset + row * region.stride, bytes.data() + row * region.block, region.block);
  }
}

}  // namespace

Schedule Schedule::from_seed(uint64_t seed, int processes, Faults faults) {
  Schedule s;
  s.seed = seed;
  if (faults == Faults::kNone) return s;
  std::mt19937_64 r(seed);
  const auto any_process = [&] { return static_cast<int>(r() % static_cast<uint64_t>(processes)); };
  s.max_delay = static_cast<int>(r() % 8);
  s.rendezvous = static_cast<double>(r() % 4) / 4;
  s.piece_bytes = r() % 2 ? 64 : size_t{1} << 20;
  if (r() % 4 == 0) s.slow_process = any_process();
  if (r() % 4 == 0) {
    s.frozen_process = any_process();
    s.freeze_at_call = 1 + static_cast<int64_t>(r() % 200);
    s.freeze_for = std::chrono::milliseconds(1 + r() % 5);
  }
  if (faults == Faults::kAll && r() % 3 == 0) {
    s.dying_process = any_process();
    s.die_at_send = 1 + static_cast<int64_t>(r() % 40);
    s.delivered_at_death = static_cast<double>(r() % 3) / 2;
  }
  return s;
}

std::string Schedule::describe() const {
  std::string text = str_cat("seed ", seed, ": delay <= ", max_delay, ", rendezvous ", rendezvous, ", piece ",
                             piece_bytes, " bytes");
  if (slow_process >= 0) text += str_cat(", process ", slow_process, " slow");
  if (frozen_process >= 0) {
    text += str_cat(", process ", frozen_process, " frozen ", freeze_for.count(), " ms at its call ", freeze_at_call);
  }
  if (dying_process >= 0) {
    text += str_cat(", process ", dying_process, " dies at its send ", die_at_send, " (",
                    static_cast<int>(delivered_at_death * 100), "% of its untaken messages still arrive)");
  }
  return text;
}

class SimNetwork::Endpoint final : public Transport {
 public:
  Endpoint(SimNetwork& network, int process) : network_(network), me_(process) {}

  const Processes& processes() const override { return *network_.processes_[me_]->processes; }
  int tag_upper_bound() const override { return 32767; }
  void send(const void* data, size_t bytes, int process, int tag, Requests& into) override {
    network_.enter(me_, true);
    std::string message(static_cast<const char*>(data), bytes);
    std::lock_guard<std::mutex> lock(network_.mu_);
    network_.send_locked(me_, process, tag, std::move(message), &into);
  }
  void receive(void* data, size_t bytes, int process, int tag, Requests& into) override {
    receive_region(static_cast<std::byte*>(data), Region{0, 1, bytes, bytes}, process, tag, into);
  }
  void send_region(const std::byte* base, const Region& region, int process, int tag, Requests& into) override {
    network_.enter(me_, true);
    std::string message;
    pack(base, region, message);
    std::lock_guard<std::mutex> lock(network_.mu_);
    network_.send_locked(me_, process, tag, std::move(message), &into);
  }
  void receive_region(std::byte* base, const Region& region, int process, int tag, Requests& into) override {
    network_.enter(me_, false);
    std::lock_guard<std::mutex> lock(network_.mu_);
    post_locked(base, region, process, tag, into);
    network_.match_locked(*network_.processes_[me_]);
  }
  bool test(Requests& requests) override {
    network_.enter(me_, false);
    std::lock_guard<std::mutex> lock(network_.mu_);
    network_.poll_locked(me_);
    const std::set<uint64_t>& pending = network_.processes_[me_]->pending;
    for (const Transfer t : requests) {
      if (pending.count(t.handle)) return false;
    }
    requests.clear();
    return true;
  }
  void abandon(Requests& requests) override {
    std::lock_guard<std::mutex> lock(network_.mu_);
    Place& place = *network_.processes_[me_];
    for (const Transfer t : requests) {
      place.pending.erase(t.handle);
      place.posted.remove_if([&](const PostedReceive& r) { return r.id == t.handle; });
    }
    requests.clear();
  }
  size_t piece_bytes() const override { return network_.schedule_.piece_bytes; }
  void send_owned(std::string message, int process, int tag, std::shared_ptr<const std::string> body,
                  int body_tag) override {
    network_.enter(me_, true);
    std::lock_guard<std::mutex> lock(network_.mu_);
    network_.send_locked(me_, process, tag, std::move(message), nullptr);
    if (body) network_.send_locked(me_, process, body_tag, *body, nullptr);
  }
  using Transport::try_take;
  std::optional<std::string> try_take(int process, int tag, int* source, const FollowersOf& followers_of) override;
  std::unique_ptr<Inbox> open_inbox(int process, PostedTags tags) override;
  void send_small(std::string_view message, int process, PostedTags tags) override {
    send_owned(std::string(message), process, tags.tag, nullptr, 0);
  }
  void flush_sends() override {
    // What this process sent is takeable before its news goes out.
    std::lock_guard<std::mutex> lock(network_.mu_);
    for (const auto& place : network_.processes_) {
      for (Message& m : place->arrived) {
        if (m.source == me_) m.ready_at = 0;
      }
    }
  }
  void upkeep() override {
    std::lock_guard<std::mutex> lock(network_.mu_);
    if (!network_.processes_[me_]->dead) network_.poll_locked(me_);
  }
  void listen(NewsHandlers handlers) override;
  void announce(const DeviceNews& news) override {
    network_.enter(me_, false);
    network_.tell_others(me_, [news](Place& place) {
      if (!place.handlers.device_news) return place.unheard.push_back(news);
      place.handlers.device_news(news);
    });
  }
  void gave_up(const std::string&) override {}
  std::chrono::milliseconds gone_grace() const override { return kSimulatedGoneGrace; }

 private:
  void post_locked(std::byte* base, const Region& region, int process, int tag, Requests& into) {
    Place& place = *network_.processes_[me_];
    const uint64_t id = network_.next_id_++;
    place.pending.insert(id);
    place.posted.push_back({process, tag, base, region, id});
    into.push_back({id});
  }

  SimNetwork& network_;
  const int me_;
};

std::optional<std::string> SimNetwork::Endpoint::try_take(int process, int tag, int* source,
                                                          const FollowersOf& followers_of) {
  network_.enter(me_, false);
  std::lock_guard<std::mutex> lock(network_.mu_);
  network_.poll_locked(me_);
  Place& place = *network_.processes_[me_];
  for (auto it = place.arrived.begin(); it != place.arrived.end(); ++it) {
    // The first ready one of its (source, tag) is the oldest: readiness
    // never decreases along one source and tag.
    if (it->tag != tag || (process != kAnyProcess && it->source != process) || it->ready_at > network_.polls_) continue;
    Message taken = std::move(*it);
    place.arrived.erase(it);
    if (taken.completes != 0) network_.processes_[taken.source]->pending.erase(taken.completes);
    if (source != nullptr) *source = taken.source;
    if (followers_of) {
      const Followers body = followers_of(taken.bytes, taken.source);
      if (body.bytes > 0) {
        post_locked(body.data, Region{0, 1, body.bytes, body.bytes}, taken.source, body.tag, *body.requests);
      }
      network_.match_locked(place);
    }
    return std::move(taken.bytes);
  }
  return std::nullopt;
}

class SimNetwork::EndpointInbox final : public Inbox {
 public:
  EndpointInbox(Endpoint& endpoint, int process, PostedTags tags)
      : endpoint_(endpoint), process_(process), tags_(tags) {}
  std::optional<std::string_view> try_take() override {
    std::optional<std::string> message = endpoint_.try_take(process_, tags_.tag);
    if (!message) return std::nullopt;
    taken_ = std::move(*message);
    return std::string_view(taken_);
  }

 private:
  Endpoint& endpoint_;
  const int process_;
  const PostedTags tags_;
  std::string taken_;
};

std::unique_ptr<Inbox> SimNetwork::Endpoint::open_inbox(int process, PostedTags tags) {
  return std::make_unique<EndpointInbox>(*this, process, tags);
}

void SimNetwork::Endpoint::listen(NewsHandlers handlers) {
  Place& place = *network_.processes_[me_];
  std::lock_guard<std::recursive_mutex> delivering(place.delivery_mu);
  place.handlers = std::move(handlers);
  for (const auto& [process, reason] : place.deaths) {
    if (place.handlers.process_died) place.handlers.process_died(process, reason);
  }
  if (!place.handlers.device_news) return;
  std::vector<DeviceNews> unheard;
  unheard.swap(place.unheard);
  for (const DeviceNews& news : unheard) place.handlers.device_news(news);
}

SimNetwork::SimNetwork(int processes, int devices_per_process, Schedule schedule)
    : schedule_(std::move(schedule)), devices_per_process_(devices_per_process), random_(schedule_.seed) {
  ORDO_ARG_CHECK(processes >= 1 && devices_per_process >= 1, "a simulated job of ", processes, " processes x ",
                 devices_per_process, " devices");
  std::vector<std::string> names;
  for (int p = 0; p < processes; ++p) names.push_back(process_name(p));
  for (int p = 0; p < processes; ++p) {
    auto place = std::make_unique<Place>();
    place->processes = std::make_unique<Processes>(
        Topology(devices_per_process, p, std::vector<int>(static_cast<size_t>(processes), 0)), names);
    processes_.push_back(std::move(place));
  }
}

SimNetwork::~SimNetwork() = default;

std::unique_ptr<Transport> SimNetwork::transport(int process) {
  ORDO_ARG_CHECK(process >= 0 && process < process_count(), "no simulated process ", process);
  return std::make_unique<Endpoint>(*this, process);
}

bool SimNetwork::dead(int process) {
  std::lock_guard<std::mutex> lock(mu_);
  return processes_[static_cast<size_t>(process)]->dead;
}

int64_t SimNetwork::sends() {
  std::lock_guard<std::mutex> lock(mu_);
  return sends_;
}

uint64_t SimNetwork::draw_delay_locked() {
  if (schedule_.max_delay <= 0) return 0;
  return random_() % static_cast<uint64_t>(schedule_.max_delay + 1);
}

void SimNetwork::send_locked(int from, int to, int tag, std::string bytes, Requests* into) {
  ORDO_CHECK(to >= 0 && to < process_count() && to != from, ": a simulated send to process ", to);
  // Another thread of the process may have died between this thread's
  // enter() and here. Its death cut what the process had sent on each tag;
  // a message sent after the cut would come without those before it (a
  // body taken for an earlier note's), which no real death does.
  if (processes_[static_cast<size_t>(from)]->dead) {
    throw_error<CollectiveError>(process_name(from), " is dead (a simulated death)");
  }
  ++sends_;
  Place& target = *processes_[static_cast<size_t>(to)];
  Message m{from, tag, std::move(bytes), 0, 0};
  const bool rendezvous = schedule_.rendezvous > 0 &&
                          static_cast<double>(random_() % 1000) < schedule_.rendezvous * 1000 && into != nullptr;
  if (rendezvous) {
    m.completes = next_id_++;
    processes_[static_cast<size_t>(from)]->pending.insert(m.completes);
    into->push_back({m.completes});
  }
  if (target.dead) return;  // never taken: a rendezvous send stays pending, as a real one would
  uint64_t& last = target.last_ready[{from, tag}];
  m.ready_at = std::max(last, polls_ + draw_delay_locked());
  last = m.ready_at;
  target.arrived.push_back(std::move(m));
  match_locked(target);
}

void SimNetwork::poll_locked(int process) {
  ++polls_;
  match_locked(*processes_[static_cast<size_t>(process)]);
}

void SimNetwork::match_locked(Place& place) {
  for (auto r = place.posted.begin(); r != place.posted.end();) {
    auto m = place.arrived.begin();
    while (m != place.arrived.end() && (m->source != r->source || m->tag != r->tag)) ++m;
    if (m == place.arrived.end() || m->ready_at > polls_) {
      ++r;
      continue;
    }
    ORDO_CHECK(m->bytes.size() == r->region.bytes(), ": a simulated message of ", m->bytes.size(),
               " bytes for a receive of ", r->region.bytes());
    unpack(m->bytes, r->base, r->region);
    if (m->completes != 0) processes_[static_cast<size_t>(m->source)]->pending.erase(m->completes);
    place.arrived.erase(m);
    place.pending.erase(r->id);
    r = place.posted.erase(r);
  }
}

void SimNetwork::enter(int process, bool sending) {
  bool died_now = false, freeze = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Place& place = *processes_[static_cast<size_t>(process)];
    if (place.dead) throw_error<CollectiveError>(process_name(process), " is dead (a simulated death)");
    ++place.calls;
    freeze = process == schedule_.frozen_process && static_cast<int64_t>(place.calls) == schedule_.freeze_at_call;
    if (sending && process == schedule_.dying_process && ++place.sends == schedule_.die_at_send) {
      die_locked(process);
      died_now = true;
    }
  }
  if (died_now) {
    const std::string reason = str_cat(process_name(process), " died: a simulated death at its send ",
                                       schedule_.die_at_send);
    tell_others(process, [process, reason](Place& place) {
      place.deaths.emplace_back(process, reason);
      if (place.handlers.process_died) place.handlers.process_died(process, reason);
    });
    throw_error<CollectiveError>(reason);
  }
  if (process == schedule_.slow_process) std::this_thread::yield();
  if (freeze) std::this_thread::sleep_for(schedule_.freeze_for);
}

void SimNetwork::die_locked(int process) {
  Place& dying = *processes_[static_cast<size_t>(process)];
  dying.dead = true;
  dying.arrived.clear();
  dying.posted.clear();
  // Of what it sent on each tag to each process, a first part still
  // arrives and the rest is lost: a later message never comes without the
  // ones before it (its bodies follow its notes on a tag of their own).
  for (const auto& place : processes_) {
    std::set<int> cut;  // tags whose rest is lost
    for (auto m = place->arrived.begin(); m != place->arrived.end();) {
      if (m->source != process) {
        ++m;
      } else if (!cut.count(m->tag) &&
                 static_cast<double>(random_() % 1000) < schedule_.delivered_at_death * 1000) {
        m->ready_at = 0;
        ++m;
      } else {
        cut.insert(m->tag);
        m = place->arrived.erase(m);
      }
    }
  }
}

void SimNetwork::settle() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& place : processes_) {
    for (Message& m : place->arrived) m.ready_at = 0;
    match_locked(*place);
  }
}

void SimNetwork::tell_others(int process, const std::function<void(Place&)>& event) {
  for (int q = 0; q < process_count(); ++q) {
    if (q == process || dead(q)) continue;
    Place& place = *processes_[static_cast<size_t>(q)];
    std::lock_guard<std::recursive_mutex> delivering(place.delivery_mu);
    event(place);
  }
}

}  // namespace ordo::comm
