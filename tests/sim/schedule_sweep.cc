// The protocol among processes under seeded schedules of the simulated
// transport (comm/simulated/): for each seed, a job of 2-4 processes x 1-2
// devices runs a program of collectives and exchanges while the schedule
// delays, reorders, stalls, kills and interrupts. Every device checks:
// - no hang: the whole job ends within kHangAfter;
// - no wrong value: whatever completes holds the reference, bitwise;
// - no wrong error: with no death and no interrupt, nothing fails; with
//   them, a device fails only with a CollectiveError that names the death
//   or the interrupt (never a mismatch, a timeout or an internal error).
// A device whose step fails stops and is marked failed, as the runtime
// marks a device whose graph failed, so that its peers fail instead of
// waiting for it.
//
//   ordo_schedule_sweep --first 0 --count 10000   # a sweep: one line, or the failing seeds
//   ordo_schedule_sweep --seed 4711               # one schedule, told step by step
//
// The seed fixes the layout, the program, the schedule and every delay;
// the threads' interleaving is the operating system's, so a replay reruns
// the same faults, and most failures it shows again within a few runs
// (scripts/sim-soak.sh replays each one it finds).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "comm/simulated/simulated_job.h"
#include "ordo/collective_types.h"
#include "device/buffer.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

constexpr auto kHangAfter = std::chrono::seconds(30);

enum class StepKind { kAllReduce, kAllGather, kExchange };

struct Step {
  StepKind kind = StepKind::kAllReduce;
  bool halves = false;  // replica groups of the even and the odd devices (even worlds)
  int64_t count = 1;    // elements per device
  size_t extra = 0;     // an exchange payload's length beyond its name
};

struct Plan {
  int processes = 2;
  int per_process = 1;
  std::vector<Step> steps;
  Schedule schedule;
  GlobalOrdinal interrupted{-1};  // none when negative
  int64_t interrupt_at_send = 0;
  int world() const { return processes * per_process; }
};

Plan plan_for(uint64_t seed) {
  std::mt19937_64 r(seed ^ 0x5eedf00dULL);
  Plan plan;
  plan.processes = 2 + static_cast<int>(r() % 3);
  plan.per_process = 1 + static_cast<int>(r() % 2);
  const int steps = 3 + static_cast<int>(r() % 4);
  for (int s = 0; s < steps; ++s) {
    Step step;
    step.kind = static_cast<StepKind>(r() % 3);
    step.halves = plan.world() % 2 == 0 && r() % 2 == 0 && step.kind != StepKind::kExchange;
    step.count = std::vector<int64_t>{1, 7, 300}[r() % 3];
    step.extra = r() % 3 == 0 ? 200 : r() % 20;
    plan.steps.push_back(step);
  }
  plan.schedule = Schedule::from_seed(seed, plan.processes, Faults::kAll);
  if (r() % 6 == 0) {
    plan.interrupted = GlobalOrdinal(static_cast<int>(r() % static_cast<uint64_t>(plan.world())));
    plan.interrupt_at_send = static_cast<int64_t>(r() % 60);
  }
  return plan;
}

ReplicaGroups groups_of(const Plan& plan, const Step& step) {
  if (!step.halves) return {};
  ReplicaGroups groups(2);
  for (int d = 0; d < plan.world(); ++d) groups[static_cast<size_t>(d % 2)].push_back(d);
  return groups;
}

std::vector<int> members(const Plan& plan, const Step& step, int device) {
  std::vector<int> all;
  for (int d = 0; d < plan.world(); ++d) {
    if (!step.halves || d % 2 == device % 2) all.push_back(d);
  }
  return all;
}

// Integers in float: every order of summing gives the same bits.
float input(int device, size_t step, int64_t i) {
  return static_cast<float>((device + 1) * 1000 + static_cast<int>(step) * 10 + static_cast<int>(i % 7));
}

std::string payload(int device, size_t step, const Step& s) {
  return "s" + std::to_string(step) + "d" + std::to_string(device) + std::string(s.extra, 'x');
}

struct Outcome {
  size_t completed = 0;
  std::string error;  // of the step after the completed ones; "" = none failed
  ErrorCode code = ErrorCode::kInternal;
  std::string wrong;  // a wrong value, described
};

// Runs step s on device d; a wrong value goes to outcome.wrong.
void run_step(Communicator& job, const Plan& plan, size_t s, int d, Outcome& outcome) {
  const Step& step = plan.steps[s];
  const std::vector<int> group = members(plan, step, d);
  if (step.kind == StepKind::kExchange) {
    const std::vector<std::string> got = job.exchange({GlobalOrdinal(d), "sweep", {}, payload(d, s, step)});
    if (got.size() != static_cast<size_t>(plan.world())) {
      outcome.wrong = "exchange step " + std::to_string(s) + ": " + std::to_string(got.size()) + " payloads";
      return;
    }
    for (int q = 0; q < plan.world(); ++q) {
      const std::string& mine = got[static_cast<size_t>(q)];
      const std::string want = payload(q, s, step);
      if (mine != want) {
        // What came, for the replay: its length and its start.
        outcome.wrong = "exchange step " + std::to_string(s) + ": payload of device " + std::to_string(q) +
                        " is " + std::to_string(mine.size()) + " bytes \"" + mine.substr(0, 16) + "\", want " +
                        std::to_string(want.size()) + " bytes \"" + want.substr(0, 16) + "\"";
        return;
      }
    }
    return;
  }
  const bool gather = step.kind == StepKind::kAllGather;
  auto in = device::allocate_buffer(DType::kFloat32, {step.count});
  for (int64_t i = 0; i < step.count; ++i) in->mutable_data<float>()[i] = input(d, s, i);
  const int64_t out_count = gather ? step.count * static_cast<int64_t>(group.size()) : step.count;
  auto out = device::allocate_buffer(DType::kFloat32, {out_count});
  ir::CollectiveAttrs attrs;
  attrs.groups = groups_of(plan, step);
  const device::Buffer* inputs[] = {in.get()};
  const device::Buffer* outputs[] = {out.get()};
  job.run({gather ? ir::OpKind::kAllGather : ir::OpKind::kAllReduce, attrs, GlobalOrdinal(d), inputs, outputs});
  for (int64_t i = 0; i < out_count; ++i) {
    float want = 0;
    if (gather) {
      want = input(group[static_cast<size_t>(i / step.count)], s, i % step.count);
    } else {
      for (int member : group) want += input(member, s, i);
    }
    if (std::memcmp(&want, &out->data<float>()[i], sizeof want) != 0) {
      outcome.wrong = "step " + std::to_string(s) + " element " + std::to_string(i) + ": " +
                      std::to_string(out->data<float>()[i]) + ", want " + std::to_string(want);
      return;
    }
  }
}

// Interrupts the plan's device once the job has sent enough (from a
// thread of its own, as Ctrl-C comes), unless the job ends first.
void interrupt_when_due(SimulatedJob& job, const Plan& plan, const std::atomic<bool>& ended, std::atomic<bool>& issued) {
  while (!ended.load() && job.network().sends() < plan.interrupt_at_send) {
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  if (ended.load()) return;
  issued.store(true);
  job.tell({DeviceEvent::Kind::kInterrupted, plan.interrupted, "a simulated interrupt"});
}

struct Verdict {
  bool ok = true;
  std::string why;
  bool died = false;
  size_t failed_steps = 0;
};

Verdict judge(const Plan& plan, SimulatedJob& job, const std::vector<Outcome>& outcomes, bool interrupted) {
  Verdict v;
  const bool death = plan.schedule.dying_process >= 0 && job.network().dead(plan.schedule.dying_process);
  v.died = death;
  for (int d = 0; d < plan.world(); ++d) {
    const Outcome& o = outcomes[static_cast<size_t>(d)];
    const int process = job.process_of(GlobalOrdinal(d));
    const bool dead = death && process == plan.schedule.dying_process;
    auto fail = [&](const std::string& why) {
      if (v.ok) v.why = "device " + std::to_string(d) + ": " + why;
      v.ok = false;
    };
    if (!o.wrong.empty()) fail("wrong value: " + o.wrong);
    if (o.error.empty()) continue;
    ++v.failed_steps;
    if (dead) continue;
    if (!death && !interrupted) {
      fail("failed with no fault: " + o.error);
    } else if (o.code != ErrorCode::kCollective) {
      fail("failed with the wrong kind of error: " + o.error);
    } else if (o.error.find("a simulated death") == std::string::npos &&
               o.error.find("a simulated interrupt") == std::string::npos) {
      fail("failed without naming the fault: " + o.error);
    }
  }
  return v;
}

// Runs one schedule; false (and why) if it breaks a promise.
Verdict run_schedule(uint64_t seed, bool tell) {
  const Plan plan = plan_for(seed);
  if (tell) {
    std::printf("%d processes x %d devices, %zu steps; %s\n", plan.processes, plan.per_process, plan.steps.size(),
                plan.schedule.describe().c_str());
    if (plan.interrupted.value() >= 0) {
      std::printf("  device %d interrupted at send %lld\n", plan.interrupted.value(),
                  static_cast<long long>(plan.interrupt_at_send));
    }
  }
  SimulatedJob job(plan.processes, plan.per_process, plan.schedule);
  std::vector<Outcome> outcomes(static_cast<size_t>(plan.world()));
  std::mutex mu;
  std::condition_variable cv;
  int running = plan.world();
  std::vector<std::thread> devices;
  for (int d = 0; d < plan.world(); ++d) {
    devices.emplace_back([&, d] {
      Outcome& o = outcomes[static_cast<size_t>(d)];
      for (size_t s = 0; s < plan.steps.size() && o.wrong.empty(); ++s) {
        try {
          run_step(job, plan, s, d, o);
          ++o.completed;
        } catch (const Error& e) {
          o.error = e.what();
          o.code = e.code();
          // As the runtime does for a device whose graph failed; a dead
          // process's devices can tell nobody.
          try {
            job.tell({DeviceEvent::Kind::kFailed, GlobalOrdinal(d), o.error});
          } catch (const Error&) {
          }
          break;
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      if (--running == 0) cv.notify_all();
    });
  }
  std::atomic<bool> ended{false}, interrupted{false};
  std::thread interrupter;
  if (plan.interrupted.value() >= 0) {
    interrupter = std::thread([&] { interrupt_when_due(job, plan, ended, interrupted); });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, kHangAfter, [&] { return running == 0; })) {
      std::printf("HANG: seed %llu (%s): %d devices still running after %lld s; replay: ordo_schedule_sweep --seed %llu\n",
                  static_cast<unsigned long long>(seed), plan.schedule.describe().c_str(), running,
                  static_cast<long long>(kHangAfter.count()), static_cast<unsigned long long>(seed));
      std::fflush(stdout);
      std::_Exit(1);  // the hung threads cannot be joined
    }
  }
  ended.store(true);
  for (std::thread& t : devices) t.join();
  if (interrupter.joinable()) interrupter.join();
  Verdict v = judge(plan, job, outcomes, interrupted.load());
  if (tell) {
    for (int d = 0; d < plan.world(); ++d) {
      const Outcome& o = outcomes[static_cast<size_t>(d)];
      std::printf("  device %d: %zu steps done%s%s\n", d, o.completed, o.error.empty() ? "" : "; then ",
                  o.error.c_str());
    }
  }
  return v;
}

int sweep(uint64_t first, uint64_t count) {
  ordo::set_collective_timeouts({60.0, 120.0});
  uint64_t failures = 0, deaths = 0, faulted = 0, failed_steps = 0;
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t seed = first; seed < first + count; ++seed) {
    const Verdict v = run_schedule(seed, false);
    deaths += v.died;
    faulted += v.failed_steps > 0;
    failed_steps += v.failed_steps;
    if (!v.ok) {
      ++failures;
      std::printf("FAIL: seed %llu: %s; replay: ordo_schedule_sweep --seed %llu\n", static_cast<unsigned long long>(seed),
                  v.why.c_str(), static_cast<unsigned long long>(seed));
      std::fflush(stdout);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%llu schedules (seeds %llu..%llu) in %.1f s: %llu broke a promise; %llu with a death, %llu with a "
              "device that failed (%llu device failures in all)\n",
              static_cast<unsigned long long>(count), static_cast<unsigned long long>(first),
              static_cast<unsigned long long>(first + count - 1), seconds, static_cast<unsigned long long>(failures),
              static_cast<unsigned long long>(deaths), static_cast<unsigned long long>(faulted),
              static_cast<unsigned long long>(failed_steps));
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace ordo::comm

int main(int argc, char** argv) {
  uint64_t first = 0, count = 10000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const uint64_t value = std::strtoull(argv[i + 1], nullptr, 10);
    if (flag == "--first") {
      first = value;
    } else if (flag == "--count") {
      count = value;
    } else if (flag == "--seed") {
      ordo::set_collective_timeouts({60.0, 120.0});
      const ordo::comm::Verdict v = ordo::comm::run_schedule(value, true);
      std::printf("%s\n", v.ok ? "ok" : ("FAIL: " + v.why).c_str());
      return v.ok ? 0 : 1;
    } else {
      std::fprintf(stderr, "usage: %s [--first N --count M | --seed S]\n", argv[0]);
      return 2;
    }
  }
  return ordo::comm::sweep(first, count);
}
