# The tests that start processes: each runs under scripts/mpirun.sh (the
# one place of ordo's launch options) with a bound on its time, mpirun's
# own (--timeout, which ends every process of the job) inside ctest's.
set(ORDO_MPIRUN ${CMAKE_CURRENT_SOURCE_DIR}/scripts/mpirun.sh)
set(ORDO_TWO_HOSTS ${CMAKE_CURRENT_SOURCE_DIR}/scripts/two-hosts.sh)
set(ORDO_MPI_TIMEOUT 60)

if(NOT MPI_C_FOUND)
  add_test(NAME mpi_world_skipped COMMAND sh -c
    "echo 'skipped: this build has no MPI backend (apt-get install libopenmpi-dev openmpi-bin, then reconfigure)'; exit 77")
  set_tests_properties(mpi_world_skipped PROPERTIES SKIP_RETURN_CODE 77)
  return()
endif()

add_executable(mpi_world_test tests/mpi/mpi_world_test.cc)
target_include_directories(mpi_world_test PRIVATE src tests)
target_compile_options(mpi_world_test PRIVATE -Wall -Wextra)
target_link_libraries(mpi_world_test PRIVATE ordo GTest::gtest)

# What the backend's messages carry: no processes needed.
add_executable(mpi_wire_test tests/mpi/mpi_wire_test.cc)
target_include_directories(mpi_wire_test PRIVATE src tests)
target_compile_options(mpi_wire_test PRIVATE -Wall -Wextra)
target_link_libraries(mpi_wire_test PRIVATE ordo GTest::gtest GTest::gtest_main)
gtest_discover_tests(mpi_wire_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60)

# The rings between a host's processes, played by two threads: no processes needed.
add_executable(host_rings_test tests/mpi/host_rings_test.cc)
target_include_directories(host_rings_test PRIVATE src tests)
target_compile_options(host_rings_test PRIVATE -Wall -Wextra)
target_link_libraries(host_rings_test PRIVATE ordo GTest::gtest GTest::gtest_main)
gtest_discover_tests(host_rings_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60)

# ordo_add_mpi_test(NAME <name> [TWO_HOSTS] ARGS <mpirun arguments and program...>
#                   [PASS_REGULAR_EXPRESSION <regex>] [TIMEOUT <seconds>])
# TWO_HOSTS: on scripts/two-hosts.sh's two namespaces (the processes split
# evenly), skipped where they cannot be made (no root); one such test at a
# time.
function(ordo_add_mpi_test)
  cmake_parse_arguments(T "TWO_HOSTS" "NAME;PASS_REGULAR_EXPRESSION;TIMEOUT" "ARGS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT ${ORDO_MPI_TIMEOUT})
  endif()
  set(launcher ${ORDO_MPIRUN})
  if(T_TWO_HOSTS)
    set(launcher ${ORDO_TWO_HOSTS})
  endif()
  add_test(NAME ${T_NAME} COMMAND ${launcher} --timeout ${T_TIMEOUT} ${T_ARGS})
  math(EXPR ctest_timeout "${T_TIMEOUT} + 30")
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${ctest_timeout} LABELS mpi)
  if(T_TWO_HOSTS)
    set_tests_properties(${T_NAME} PROPERTIES SKIP_RETURN_CODE 77 RESOURCE_LOCK two_hosts LABELS "mpi;two_hosts")
  endif()
  if(T_PASS_REGULAR_EXPRESSION)
    set_tests_properties(${T_NAME} PROPERTIES PASS_REGULAR_EXPRESSION "${T_PASS_REGULAR_EXPRESSION}")
  endif()
endfunction()

set(world_test $<TARGET_FILE:mpi_world_test>)
foreach(processes 1 2 3 4)
  foreach(devices 1 2)
    ordo_add_mpi_test(NAME mpi_world_${processes}x${devices}
      ARGS -np ${processes} -x ORDO_NUM_DEVICES=${devices} ${world_test} --gtest_filter=MpiWorld.*)
  endforeach()
endforeach()
# 2 hosts x 2 processes x 2 devices.
ordo_add_mpi_test(NAME two_hosts_mpi_world_2x2x2 TWO_HOSTS
  ARGS -np 4 -x ORDO_NUM_DEVICES=2 ${world_test} --gtest_filter=MpiWorld.*)

# The runtime on the job: ordinals, spawn, restarts (2 x 2, 3 x 1), and a
# start refused when the processes disagree on their devices.
add_executable(mpi_runtime_test tests/mpi/mpi_runtime_test.cc)
target_include_directories(mpi_runtime_test PRIVATE src tests)
target_compile_options(mpi_runtime_test PRIVATE -Wall -Wextra)
target_link_libraries(mpi_runtime_test PRIVATE ordo GTest::gtest GTest::gtest_main)
set(runtime_test $<TARGET_FILE:mpi_runtime_test>)
foreach(layout 2x2 3x1)
  string(REPLACE "x" ";" layout_words ${layout})
  list(GET layout_words 0 processes)
  list(GET layout_words 1 devices)
  ordo_add_mpi_test(NAME mpi_runtime_${layout}
    ARGS -np ${processes} -x ORDO_NUM_DEVICES=${devices} ${runtime_test} --gtest_filter=MpiRuntime.*)
endforeach()
ordo_add_mpi_test(NAME mpi_runtime_disagreeing_devices
  ARGS -np 1 -x ORDO_NUM_DEVICES=1 -x ORDO_TEST_DISAGREEING=1 ${runtime_test}
             --gtest_filter=MpiRuntimeDisagreeing.* :
       -np 1 -x ORDO_NUM_DEVICES=2 -x ORDO_TEST_DISAGREEING=1 ${runtime_test}
             --gtest_filter=MpiRuntimeDisagreeing.*)

# Three processes with 1, 2 and 2 devices (mpirun's MPMD form): each one
# gets the error, and the job ends.
ordo_add_mpi_test(NAME mpi_world_disagreeing_devices
  ARGS -np 1 -x ORDO_NUM_DEVICES=1 -x ORDO_TEST_DEVICES_BY_PROCESS=1,2,2
             ${world_test} --gtest_filter=MpiWorldDisagreeing.* :
       -np 2 -x ORDO_NUM_DEVICES=2 -x ORDO_TEST_DEVICES_BY_PROCESS=1,2,2
             ${world_test} --gtest_filter=MpiWorldDisagreeing.*)

# mpirun says so when a process exits without MPI_Finalize; ordo says why.
ordo_add_mpi_test(NAME mpi_world_no_finalize_after_peer_failure
  ARGS -np 2 -x ORDO_TEST_PEER_FAILURE=1 -x ORDO_NUM_DEVICES=1 ${world_test} --gtest_filter=MpiWorldPeerFailure.*
  PASS_REGULAR_EXPRESSION "exits without MPI_Finalize \\(its fence would wait for a peer that may never come\\): test: every peer is taken for failed[^\n]*\n(.|\n)*exiting improperly")

# The MPI backend against the in-process one, bitwise, at every layout. 4 x 2
# on two loaded cores (eight spinning device threads) took 100-150 s.
add_executable(mpi_matches_in_process_test tests/mpi/mpi_matches_in_process_test.cc)
target_include_directories(mpi_matches_in_process_test PRIVATE src tests)
target_compile_options(mpi_matches_in_process_test PRIVATE -Wall -Wextra)
target_link_libraries(mpi_matches_in_process_test PRIVATE ordo GTest::gtest GTest::gtest_main)
foreach(processes 1 2 3 4)
  foreach(devices 1 2)
    ordo_add_mpi_test(NAME mpi_matches_in_process_${processes}x${devices}
      TIMEOUT 300 ARGS -np ${processes} -x ORDO_NUM_DEVICES=${devices} $<TARGET_FILE:mpi_matches_in_process_test>)
  endforeach()
endforeach()

# Failures across processes: mismatches, a device that never comes, abandons.
add_executable(mpi_failures_test tests/mpi/mpi_failures_test.cc)
target_include_directories(mpi_failures_test PRIVATE src tests)
target_compile_options(mpi_failures_test PRIVATE -Wall -Wextra)
target_link_libraries(mpi_failures_test PRIVATE ordo GTest::gtest GTest::gtest_main)
foreach(layout 2x1 2x2 3x1 4x2)
  string(REPLACE "x" ";" parts ${layout})
  list(GET parts 0 processes)
  list(GET parts 1 devices)
  ordo_add_mpi_test(NAME mpi_failures_${layout}
    ARGS -np ${processes} -x ORDO_NUM_DEVICES=${devices} $<TARGET_FILE:mpi_failures_test>)
endforeach()
ordo_add_mpi_test(NAME mpi_failures_2x2_shm_off
  ARGS -np 2 -x ORDO_NUM_DEVICES=2 -x ORDO_MPI_SHM=off $<TARGET_FILE:mpi_failures_test>)

# Rendezvous payloads past MPI's int count: one over 2 GiB arrives intact
# (about 8 GiB between the two processes, seconds), and a sender short of
# memory fails both processes at once with its reason.
add_executable(mpi_large_payload_test tests/mpi/mpi_large_payload_test.cc)
target_include_directories(mpi_large_payload_test PRIVATE src tests)
target_compile_options(mpi_large_payload_test PRIVATE -Wall -Wextra)
target_link_libraries(mpi_large_payload_test PRIVATE ordo GTest::gtest GTest::gtest_main)
ordo_add_mpi_test(NAME mpi_rendezvous_large_payload_2x1 TIMEOUT 120
  ARGS -np 2 -x ORDO_NUM_DEVICES=1 $<TARGET_FILE:mpi_large_payload_test>)

# The same lines on every layout of one world (same_across_layouts.sh runs
# mpirun itself, each run with its bound): the bitwise-layout property
# (bitwise_layout.cc: 1 x 8 in-process, 2 x 4, 4 x 2, 8 x 1, on one host
# and on two, where 4 x 2 is 2 hosts x 2 processes x 2 devices), and the
# demo's per-device lines (1 x 4, 2 x 2, 4 x 1).
add_executable(bitwise_layout tests/mpi/bitwise_layout.cc)
target_compile_options(bitwise_layout PRIVATE -Wall -Wextra)
target_link_libraries(bitwise_layout PRIVATE ordo)
set(same_across_layouts ${CMAKE_CURRENT_SOURCE_DIR}/tests/mpi/same_across_layouts.sh)
add_test(NAME mpi_bitwise_layouts COMMAND ${same_across_layouts} 8 "^ordinal" $<TARGET_FILE:bitwise_layout>)
add_test(NAME two_hosts_bitwise_layouts
  COMMAND ${same_across_layouts} --two-hosts 8 "^ordinal" $<TARGET_FILE:bitwise_layout>)
add_test(NAME mpi_demo_layouts COMMAND ${same_across_layouts} 4 "^  device|matched" $<TARGET_FILE:ordo_demo>)
set_tests_properties(mpi_bitwise_layouts mpi_demo_layouts PROPERTIES TIMEOUT 300 LABELS mpi)
set_tests_properties(two_hosts_bitwise_layouts PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77 RESOURCE_LOCK two_hosts
  LABELS "mpi;two_hosts")

# ordo_add_torch_xla_program_test(NAME <name> CHECKS <mesh_expect.sh options...> ARGS <mpirun arguments...>)
# mpi_torch_xla_program_<name>_2x2: mpirun must exit 0 and its output pass
# the checks (tests/mpi/mesh_expect.sh), within 120 s.
function(ordo_add_torch_xla_program_test)
  cmake_parse_arguments(T "" "NAME" "CHECKS;ARGS" ${ARGN})
  set(test_name mpi_torch_xla_program_${T_NAME}_2x2)
  add_test(NAME ${test_name} COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/mpi/mesh_expect.sh --status 0 ${T_CHECKS} --
           --timeout 120 ${T_ARGS})
  set_tests_properties(${test_name} PROPERTIES TIMEOUT 150 LABELS mpi)
endfunction()

# torch_xla's semantics across processes (tests/mpi/python/semantics.py):
# 2 x 2 and 4 x 1 under mpirun; 1 x 4 in-process, and mpirun with one
# process (which stays in-process), as controls.
if(ORDO_BUILD_PYTHON)
  set(semantics ${CMAKE_CURRENT_SOURCE_DIR}/tests/mpi/python/semantics.py)
  foreach(layout 2x2 4x1 1x4)
    string(REPLACE "x" ";" layout_words ${layout})
    list(GET layout_words 0 processes)
    list(GET layout_words 1 devices)
    ordo_add_mpi_test(NAME mpi_python_semantics_${layout}
      ARGS -np ${processes} -x ORDO_NUM_DEVICES=${devices} ${Python3_EXECUTABLE} ${semantics})
  endforeach()
  # 2 hosts x 1 process x 2 devices, and 2 hosts x 2 processes x 1 device.
  ordo_add_mpi_test(NAME two_hosts_python_semantics_2x1x2 TWO_HOSTS
    ARGS -np 2 -x ORDO_NUM_DEVICES=2 ${Python3_EXECUTABLE} ${semantics})
  ordo_add_mpi_test(NAME two_hosts_python_semantics_2x2x1 TWO_HOSTS
    ARGS -np 4 -x ORDO_NUM_DEVICES=1 ${Python3_EXECUTABLE} ${semantics})
  add_test(NAME python_semantics_in_process_1x4 COMMAND ${Python3_EXECUTABLE} ${semantics})
  set_tests_properties(python_semantics_in_process_1x4 PROPERTIES ENVIRONMENT ORDO_NUM_DEVICES=4 TIMEOUT 120
    LABELS mpi)
  # torch_xla programs on the xla device across processes, with ordo._torch.
  if(ORDO_TORCH_DEVICE)
    set(torch_semantics ${CMAKE_CURRENT_SOURCE_DIR}/tests/mpi/python/torch_semantics.py)
    ordo_add_mpi_test(NAME mpi_torch_semantics_2x2
      ARGS -np 2 -x ORDO_NUM_DEVICES=2 ${Python3_EXECUTABLE} ${torch_semantics})
    add_test(NAME torch_semantics_in_process_1x4 COMMAND ${Python3_EXECUTABLE} ${torch_semantics})
    set_tests_properties(torch_semantics_in_process_1x4 PROPERTIES ENVIRONMENT ORDO_NUM_DEVICES=4 TIMEOUT 120
      LABELS mpi)
    # torch_xla's own test programs and MNIST example in their shape
    # (tests/torch_xla_programs/), run as a user runs them at 2 x 2: mpirun
    # exits 0 and ordinal 0 prints what each program prints when its
    # checks hold (tests/python/test_torch_xla_programs.py runs them 1 x 4).
    set(programs ${CMAKE_CURRENT_SOURCE_DIR}/tests/torch_xla_programs)
    set(program_run -np 2 -x ORDO_NUM_DEVICES=2 -x PYTHONPATH=${CMAKE_CURRENT_SOURCE_DIR}/python
      ${Python3_EXECUTABLE})
    foreach(name all_gather reduce_scatter all_to_all collective_permute replication mesh_reduce distributed_mm
                 rendezvous torch_distributed)
      ordo_add_torch_xla_program_test(NAME ${name} CHECKS --expect 1 "${name} ok"
        ARGS ${program_run} ${programs}/mp_${name}.py)
    endforeach()
    ordo_add_torch_xla_program_test(NAME sync_batch_norm CHECKS --expect 4 "(1d|2d|3d).* ok"
      ARGS ${program_run} ${programs}/mp_sync_batch_norm.py)
    ordo_add_torch_xla_program_test(NAME save CHECKS --expect 1 "save ok"
      ARGS ${program_run} ${programs}/mp_save.py ${CMAKE_CURRENT_BINARY_DIR}/torch_xla_program_save.pt)
    ordo_add_torch_xla_program_test(NAME train_mp_mnist CHECKS --expect 1 "Max Accuracy: (9[0-9]|100)\\."
      ARGS ${program_run} ${programs}/train_mp_mnist.py --num_epochs 3 --target_accuracy 90)
    ordo_add_torch_xla_program_test(NAME train_mp_mnist_fake_data CHECKS --expect 1 "Max Accuracy: 100\\.00%"
      ARGS ${program_run} ${programs}/train_mp_mnist.py --fake_data --num_epochs 1 --target_accuracy 100)
  endif()
  # The timeline's one file from every process (tests/mpi/python/trace.py).
  set(trace_check ${CMAKE_CURRENT_SOURCE_DIR}/tests/mpi/python/trace.py)
  foreach(layout 2x2 3x1)
    string(REPLACE "x" ";" layout_words ${layout})
    list(GET layout_words 0 processes)
    list(GET layout_words 1 devices)
    ordo_add_mpi_test(NAME mpi_python_trace_${layout}
      ARGS -np ${processes} -x ORDO_NUM_DEVICES=${devices} ${Python3_EXECUTABLE} ${trace_check}
        ${CMAKE_CURRENT_BINARY_DIR}/mpi_trace_${layout}.json)
  endforeach()
  # A bad ORDO_* value fails every process at its start, naming it.
  ordo_add_mpi_test(NAME mpi_bad_variable_fails_every_start_2x1 TIMEOUT 60
    ARGS -np 2 -x ORDO_NUM_DEVICES=1 -x ORDO_COLLECTIVE_TIMEOUT_SECONDS=x ${Python3_EXECUTABLE}
      ${CMAKE_CURRENT_SOURCE_DIR}/tests/mpi/python/bad_variable.py)
endif()

# The conformance suites (collectives and exchange) checking the MPI backend:
# the in-process suites' sources with a main that joins the job and puts the
# "mpi" backend in place of the in-process one. Each process runs and checks
# its own devices at the job's world size; every process's gtest result is
# its exit code, and mpirun fails the job if any is nonzero. --tag-output
# marks each line with the process's rank (and mpirun's pty would colour it).
# Until the MPI communicator is built in, tests/mpi/mpi_communicator_standin.cc
# serves jobs of one process (an in-process communicator) and the jobs of
# several processes are reported skipped; deleting the stand-in links the
# real one and runs them all.
# (A glob, so that deleting the file reconfigures the build.)
file(GLOB ORDO_MPI_COMMUNICATOR_STANDIN CONFIGURE_DEPENDS tests/mpi/mpi_communicator_standin.cc)
foreach(suite comm_conformance comm_exchange_conformance)
  add_executable(${suite}_mpi_test tests/${suite}_test.cc tests/mpi/conformance_mpi_main.cc
                 ${ORDO_MPI_COMMUNICATOR_STANDIN})
  target_include_directories(${suite}_mpi_test PRIVATE src tests)
  target_compile_options(${suite}_mpi_test PRIVATE -Wall -Wextra)
  target_link_libraries(${suite}_mpi_test PRIVATE ordo GTest::gtest)
  foreach(processes 1 2 3 4)
    foreach(devices 1 2)
      set(name ${suite}_mpi_${processes}x${devices})
      if(ORDO_MPI_COMMUNICATOR_STANDIN AND processes GREATER 1)
        add_test(NAME ${name} COMMAND sh -c
          "echo 'skipped: the MPI communicator is not built in yet (tests/mpi/mpi_communicator_standin.cc serves one process)'; exit 77")
        set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS mpi)
      else()
        ordo_add_mpi_test(NAME ${name} TIMEOUT 150
          ARGS --tag-output -np ${processes} -x ORDO_NUM_DEVICES=${devices} $<TARGET_FILE:${suite}_mpi_test> --gtest_color=no)
      endif()
    endforeach()
  endforeach()
endforeach()

# The same suites with headers by MPI between the processes of this host
# too (every other run above sends them through shared memory), and with
# MPI messages of at most a few KB, so that data and payloads take the
# paths of those over 1 GiB (cut into pieces; a payload after its note).
# (1000 bytes doubled the collectives' time: 4000 there.)
foreach(suite_piece comm_conformance:4000 comm_exchange_conformance:1000)
  string(REPLACE ":" ";" suite_piece ${suite_piece})
  list(GET suite_piece 0 suite)
  list(GET suite_piece 1 piece)
  if(NOT ORDO_MPI_COMMUNICATOR_STANDIN)
    ordo_add_mpi_test(NAME ${suite}_mpi_2x2_shm_off TIMEOUT 150
      ARGS --tag-output -np 2 -x ORDO_NUM_DEVICES=2 -x ORDO_MPI_SHM=off $<TARGET_FILE:${suite}_mpi_test> --gtest_color=no)
    ordo_add_mpi_test(NAME ${suite}_mpi_2x2_small_pieces TIMEOUT 150
      ARGS --tag-output -np 2 -x ORDO_NUM_DEVICES=2 -x ORDO_TEST_MPI_PIECE_BYTES=${piece}
           $<TARGET_FILE:${suite}_mpi_test> --gtest_color=no)
  endif()
endforeach()

# ordo's process mesh: its wire and sockets without processes, then under
# mpirun, each run bounded by mpirun's --timeout (20 s) inside ctest's.
add_executable(mesh_wire_test tests/mpi/mesh_wire_test.cc)
target_include_directories(mesh_wire_test PRIVATE src tests)
target_compile_options(mesh_wire_test PRIVATE -Wall -Wextra)
target_link_libraries(mesh_wire_test PRIVATE ordo GTest::gtest GTest::gtest_main)
gtest_discover_tests(mesh_wire_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60)

add_executable(process_mesh_test tests/mpi/process_mesh_test.cc)
target_include_directories(process_mesh_test PRIVATE src tests)
target_compile_options(process_mesh_test PRIVATE -Wall -Wextra)
target_link_libraries(process_mesh_test PRIVATE ordo GTest::gtest)

# ordo_add_mesh_test(NAME <name> CHECKS <mesh_expect.sh options...> ARGS <mpirun arguments...>)
# (mpirun may cut one process's line into another's: no ^ or $ in the checks)
function(ordo_add_mesh_test)
  cmake_parse_arguments(T "" "NAME" "CHECKS;ARGS" ${ARGN})
  add_test(NAME ${T_NAME} COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/mpi/mesh_expect.sh ${T_CHECKS} --
           --timeout 20 ${T_ARGS})
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT 40 LABELS mpi)
endfunction()

set(mesh_test $<TARGET_FILE:process_mesh_test>)
set(pass_line "ordo-mesh-test PASS: process [0-9]+ heard")
# mpirun SIGTERMs the survivors ~1 s after a death, which would race with
# their checks on a loaded machine: off where a process dies on purpose.
set(survive_deaths --mca orte_abort_on_non_zero_status 0)
foreach(processes 2 3)
  ordo_add_mesh_test(NAME mpi_mesh_news_${processes} CHECKS --status 0
    ARGS -np ${processes} ${mesh_test} --gtest_filter=ProcessMesh.*)
  math(EXPR survivors "${processes} - 1")
  # The victim is the last process: process 1 of 2, process 2 of 3.
  ordo_add_mesh_test(NAME mpi_mesh_sigkill_${processes}
    CHECKS --expect ${survivors} "${pass_line} in [0-4]\\.[0-9]+ s: process ${survivors} \\(host [^,]+, pid [0-9]+\\) died: its connection closed without a goodbye"
    ARGS ${survive_deaths} -np ${processes} -x ORDO_TEST_MESH_DEATH=sigkill ${mesh_test} --gtest_filter=ProcessMeshDeath.*)
  ordo_add_mesh_test(NAME mpi_mesh_last_words_${processes}
    CHECKS --expect ${survivors} "${pass_line} in [0-4]\\.[0-9]+ s: process ${survivors} \\(host [^,]+, pid [0-9]+\\) raised RuntimeError: boom"
    ARGS ${survive_deaths} -np ${processes} -x ORDO_TEST_MESH_DEATH=last_words ${mesh_test} --gtest_filter=ProcessMeshDeath.*)
endforeach()
# A stream reset (as a failed link gives) is a lost process, not a death.
ordo_add_mesh_test(NAME mpi_mesh_lost_link
  CHECKS --expect 1 "${pass_line} in [0-4]\\.[0-9]+ s: process 1 \\(host [^,]+, pid [0-9]+\\) is lost: its connection failed \\(Connection reset by peer\\): it died, or its host or the network to it failed"
  ARGS ${survive_deaths} -np 2 -x ORDO_TEST_MESH_DEATH=reset ${mesh_test} --gtest_filter=ProcessMeshDeath.*)
ordo_add_mesh_test(NAME mpi_mesh_uncaught_exception
  CHECKS --expect 1 "${pass_line} in [0-4]\\.[0-9]+ s: process 1 \\(host [^,]+, pid [0-9]+\\) raised std::runtime_error: boom"
  ARGS ${survive_deaths} -np 2 -x ORDO_TEST_MESH_DEATH=uncaught ${mesh_test} --gtest_filter=ProcessMeshDeath.*)

# A SIGTERM after a death (as mpirun sends it): ordo's message names the dead.
ordo_add_mesh_test(NAME mpi_mesh_sigterm_names_the_dead
  CHECKS --expect 2 "${pass_line}"
         --expect 2 "ordo: process [01] \\(host [^)]+\\): stopped by SIGTERM, as mpirun ends a job. ordo saw: (.* )?process 2 \\(host [^,]+, pid [0-9]+\\) died: its connection closed without a goodbye"
  ARGS ${survive_deaths} -np 3 -x ORDO_TEST_MESH_DEATH=sigkill -x ORDO_TEST_MESH_AFTER=sigterm ${mesh_test}
       --gtest_filter=ProcessMeshDeath.*)
ordo_add_mesh_test(NAME mpi_mesh_sigterm_with_no_failure
  CHECKS --expect 1 "${pass_line} process 0 end"
         --expect 1 "ordo: process 0 \\(host [^)]+\\): stopped by SIGTERM, as mpirun ends a job. ordo saw no failure of its peers \\(mpirun itself was signalled, or a process ended outside ordo\\)"
  ARGS ${survive_deaths} -np 2 -x ORDO_TEST_MESH_SIGTERM=1 ${mesh_test}
       --gtest_filter=ProcessMeshSigterm.WithNoFailureSeenItSaysSo)
ordo_add_mesh_test(NAME mpi_mesh_sigterm_names_a_peers_device_failure
  CHECKS --expect 1 "${pass_line} process 0 end"
         --expect 1 "ordo: process 0 \\(host [^)]+\\): stopped by SIGTERM, as mpirun ends a job. ordo saw: device 1 of process 1 \\(host [^,]+, pid [0-9]+\\) failed: device 1 raised RuntimeError: boom"
         --expect 0 "saw no failure"
  ARGS ${survive_deaths} -np 2 -x ORDO_TEST_MESH_SIGTERM=1 ${mesh_test}
       --gtest_filter=ProcessMeshSigterm.AfterAPeersDeviceFailedItNamesIt)

# Every process ends cleanly: no death, MPI_Finalize everywhere.
ordo_add_mesh_test(NAME mpi_mesh_clean_exit
  CHECKS --status 0 --expect 0 "exiting improperly|died|without MPI_Finalize"
  ARGS -np 3 ${mesh_test} --gtest_filter=ProcessMeshCleanExit.*)

# A process held before its start (before MPI, after it, between two
# runtimes): the other warns at 1 s and fails at 3 s naming it, and the
# job ends (a process held a minute would outlast mpirun's 20 s).
set(start_held_timeouts -x ORDO_COLLECTIVE_WARN_SECONDS=1 -x ORDO_COLLECTIVE_TIMEOUT_SECONDS=3)
set(job_not_ended "time limit for job execution has been reached")  # mpirun's --timeout ended it
foreach(held before_mpi after_mpi between_runtimes)
  ordo_add_mesh_test(NAME mpi_start_held_${held}
    CHECKS --expect 1 "ordo-mesh-test PASS: process 0 failed its start in [3-5]\\.[0-9] s"
           --expect 1 "process 0 \\(host [^,]+, pid [0-9]+\\) has waited 1 s for the other processes of its MPI job in .*. missing: process 1"
           --expect 0 "${job_not_ended}"
    ARGS -np 2 -x ORDO_TEST_START_HELD=${held} ${start_held_timeouts} ${world_test} --gtest_filter=MpiStartHeld.*)
endforeach()

# A process killed while its host's shared memory is made, the one that
# made it or the other: nothing stays in /dev/shm.
foreach(victim maker mapper)
  ordo_add_mesh_test(NAME mpi_host_rings_${victim}_killed_leaves_nothing
    CHECKS --no-new-files "/dev/shm/ordo-rings-*"
           --expect 1 "ordo-mesh-test: process 1 kills the ${victim} \\(pid [0-9]+\\) between the making and the mapping"
           --expect 0 "${job_not_ended}"
    ARGS -np 2 -x ORDO_TEST_RINGS_VICTIM=${victim} ${world_test} --gtest_filter=HostRingsKilled.*)
endforeach()

# A failure in one process ends every other within 30 s, naming it
# (tests/mpi/python/failures.py prints each survivor's error): the spawn
# function raising on the last device, the last process killed, exiting
# without finalizing, or dying of an uncaught exception; with mpirun's
# SIGTERM off (the survivors' own errors), and once with it on, where
# whichever comes first (ordo's error or its SIGTERM message) names the dead.
if(ORDO_BUILD_PYTHON)
  set(failures ${CMAKE_CURRENT_SOURCE_DIR}/tests/mpi/python/failures.py)
  set(failed_after "failed after [0-9.]+ s: .*")
  set(died "process 1 \\(host [^,]+, pid [0-9]+\\) died")
  ordo_add_mesh_test(NAME mpi_failure_spawn_raises_2x2
    CHECKS --expect 1 "device 0 ${failed_after}device 3 is gone \\(its spawn function raised RuntimeError: boom"
           --expect 1 "device 1 ${failed_after}device 3 is gone \\(its spawn function raised RuntimeError: boom"
           --expect 1 "device 2 ${failed_after}device 3 is gone \\(its spawn function raised RuntimeError: boom"
    ARGS ${survive_deaths} -np 2 -x ORDO_NUM_DEVICES=2 -x ORDO_TEST_FAILURE=raise ${Python3_EXECUTABLE} ${failures})
  ordo_add_mesh_test(NAME mpi_failure_sigkill_2x2
    CHECKS --expect 1 "device 0 ${failed_after}${died}" --expect 1 "device 1 ${failed_after}${died}"
    ARGS ${survive_deaths} -np 2 -x ORDO_NUM_DEVICES=2 -x ORDO_TEST_FAILURE=sigkill ${Python3_EXECUTABLE} ${failures})
  ordo_add_mesh_test(NAME mpi_failure_exit_without_finalize_2x1
    CHECKS --expect 1 "device 0 ${failed_after}${died}"
    ARGS ${survive_deaths} -np 2 -x ORDO_NUM_DEVICES=1 -x ORDO_TEST_FAILURE=exit ${Python3_EXECUTABLE} ${failures})
  ordo_add_mesh_test(NAME mpi_failure_uncaught_exception_2x2
    CHECKS --expect 1 "device 0 ${failed_after}process 1 \\(host [^,]+, pid [0-9]+\\) raised RuntimeError: boom"
           --expect 1 "device 1 ${failed_after}process 1 \\(host [^,]+, pid [0-9]+\\) raised RuntimeError: boom"
    ARGS ${survive_deaths} -np 2 -x ORDO_NUM_DEVICES=2 -x ORDO_TEST_FAILURE=uncaught ${Python3_EXECUTABLE} ${failures})
  # A process held in Python before it starts ordo (as mpi_start_held_before_mpi).
  ordo_add_mesh_test(NAME mpi_python_start_held_2x1
    CHECKS --expect 1 "ordo-mesh-test PASS: process 0 failed its start in [3-5]\\.[0-9] s: .*missing: process 1"
           --expect 1 "has waited 1 s for the other processes of its MPI job in the start of MPI"
           --expect 0 "${job_not_ended}"
    ARGS -np 2 -x ORDO_NUM_DEVICES=1 ${start_held_timeouts} ${Python3_EXECUTABLE}
         ${CMAKE_CURRENT_SOURCE_DIR}/tests/mpi/python/held_start.py)
  ordo_add_mesh_test(NAME mpi_failure_sigkill_mpirun_ends_the_job_2x1
    CHECKS --expect + "${died}"
    ARGS -np 2 -x ORDO_NUM_DEVICES=1 -x ORDO_TEST_FAILURE=sigkill ${Python3_EXECUTABLE} ${failures})

  # Processes that do not end together (tests/mpi/python/endings.py).
  # A process that finishes early makes its devices gone for every peer at
  # once, with that reason, and every process still finalizes (status 0):
  # in each layout, with shared memory off, and with rendezvous steps.
  set(endings ${CMAKE_CURRENT_SOURCE_DIR}/tests/mpi/python/endings.py)
  set(finished "failed after [0-2]\\.[0-9]+ s: .*device [0-9]+ is gone \\(process 1 \\(host [^,]+, pid [0-9]+\\) finished its program\\)")
  foreach(case "2x1;1;" "2x2;2;" "4x1;3;" "2x2_shm_off;2;-x;ORDO_MPI_SHM=off" "2x2_rendezvous;2;-x;ORDO_TEST_STEP=rendezvous")
    list(GET case 0 name)
    list(GET case 1 survivors)
    list(SUBLIST case 2 -1 extra)
    string(REGEX MATCH "^([0-9])x([0-9])" layout ${name})
    ordo_add_mesh_test(NAME mpi_ending_finish_early_${name}
      CHECKS --status 0 --expect ${survivors} "${finished}" --expect 0 "without MPI_Finalize"
      ARGS -np ${CMAKE_MATCH_1} -x ORDO_NUM_DEVICES=${CMAKE_MATCH_2} -x ORDO_TEST_ENDING=finish_early ${extra}
           ${Python3_EXECUTABLE} ${endings})
  endforeach()
  # A process that gave up on a collective (it caught the error and exits)
  # ends whatever its peer does: asleep in Python, stopped, or asleep after
  # its own error. It exits without MPI_Finalize, whose fence would wait for
  # that peer; the peer sleeps far longer than the test may take.
  set(gave_up "exits without MPI_Finalize .*: it gave up on a collective \\(.*\\), and process 1 \\(host [^,]+, pid [0-9]+\\) had not finished within 2 s")
  foreach(mode sleep sigstop mismatch)
    ordo_add_mesh_test(NAME mpi_ending_gave_up_beside_${mode}_2x1
      CHECKS --expect 1 "device 0 failed after" --expect 1 "${gave_up}"
      ARGS -np 2 -x ORDO_NUM_DEVICES=1 -x ORDO_COLLECTIVE_TIMEOUT_SECONDS=3 -x ORDO_TEST_ENDING=${mode}
           ${Python3_EXECUTABLE} ${endings})
  endforeach()
  # Ctrl-C in a process while one of its devices waits in a collective
  # and the other, the leader of its devices, computes: the waiting one
  # tells the other process at once, which fails naming the interrupt.
  ordo_add_mesh_test(NAME mpi_ending_ctrl_c_beside_a_busy_leader_2x2
    CHECKS --expect 2 "device [01] failed after [0-2]\\.[0-9]+ s: .*device 3 is gone \\(the main thread was interrupted by KeyboardInterrupt"
    ARGS -np 2 -x ORDO_NUM_DEVICES=2 -x ORDO_TEST_ENDING=ctrl_c ${Python3_EXECUTABLE} ${endings})
  # Both gave up and exit: every process finalizes.
  ordo_add_mesh_test(NAME mpi_ending_both_gave_up_2x2
    CHECKS --status 0 --expect 2 "device [01] failed after" --expect 0 "without MPI_Finalize"
    ARGS -np 2 -x ORDO_NUM_DEVICES=2 -x ORDO_TEST_ENDING=together ${Python3_EXECUTABLE} ${endings})

  # A spawn after a failed one cannot start afresh under mpirun: it refuses
  # at once, before it runs anything, naming the failure; a restarted
  # runtime then works (tests/mpi/python/respawn.py).
  ordo_add_mesh_test(NAME mpi_spawn_after_a_failure_refuses_2x2
    CHECKS --status 0
           --expect 2 "spawn refused after 0\\.[0-9]+ s, having run \\[\\]: spawn cannot start afresh: under mpirun .*device 3 is gone \\(its spawn function raised RuntimeError: boom on the last device\\).*shutdown\\(\\) and init\\(\\) in every process start again"
           --expect 2 "after init: \\[10.0, 10.0\\] \\(expected 10.0\\)"
    ARGS -np 2 -x ORDO_NUM_DEVICES=2 ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/mpi/python/respawn.py)
endif()
