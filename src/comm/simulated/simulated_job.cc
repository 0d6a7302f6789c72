#include "comm/simulated/simulated_job.h"

#include "comm/protocol/processes_communicator.h"

namespace ordo::comm {

SimulatedJob::SimulatedJob(int processes, int devices_per_process, Schedule schedule)
    : devices_per_process_(devices_per_process), network_(processes, devices_per_process, std::move(schedule)) {
  for (int p = 0; p < processes; ++p) {
    processes_.push_back(std::make_unique<ProcessesCommunicator>(network_.transport(p)));
  }
}

SimulatedJob::~SimulatedJob() = default;

Communicator& SimulatedJob::owner(GlobalOrdinal device) {
  // A device outside the world: the first process refuses it, as any would.
  if (device.value() < 0 || device.value() >= world_size()) return *processes_.front();
  return *processes_[static_cast<size_t>(process_of(device))];
}

bool SimulatedJob::out_of_step() {
  for (const auto& process : processes_) {
    if (process->out_of_step()) return true;
  }
  return false;
}

std::optional<std::string> SimulatedJob::start_afresh(const std::function<void()>& prepare) {
  return processes_.front()->start_afresh(prepare);
}

}  // namespace ordo::comm
