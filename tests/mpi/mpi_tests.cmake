# The tests that start processes: each runs under scripts/mpirun.sh (the
# one place of ordo's launch options) with a bound on its time, mpirun's
# own (--timeout, which ends every process of the job) inside ctest's.
set(ORDO_MPIRUN ${CMAKE_CURRENT_SOURCE_DIR}/scripts/mpirun.sh)
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

# ordo_add_mpi_test(NAME <name> ARGS <mpirun arguments and program...>
#                   [PASS_REGULAR_EXPRESSION <regex>])
function(ordo_add_mpi_test)
  cmake_parse_arguments(T "" "NAME;PASS_REGULAR_EXPRESSION" "ARGS" ${ARGN})
  add_test(NAME ${T_NAME} COMMAND ${ORDO_MPIRUN} --timeout ${ORDO_MPI_TIMEOUT} ${T_ARGS})
  math(EXPR ctest_timeout "${ORDO_MPI_TIMEOUT} + 30")
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${ctest_timeout} LABELS mpi)
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
  PASS_REGULAR_EXPRESSION "exits without MPI_Finalize \\(it would wait for a failed peer\\): test: every peer is taken for failed[^\n]*\n(.|\n)*exiting improperly")

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
ordo_add_mesh_test(NAME mpi_mesh_uncaught_exception
  CHECKS --expect 1 "${pass_line} in [0-4]\\.[0-9]+ s: process 1 \\(host [^,]+, pid [0-9]+\\) raised std::runtime_error: boom"
  ARGS ${survive_deaths} -np 2 -x ORDO_TEST_MESH_DEATH=uncaught ${mesh_test} --gtest_filter=ProcessMeshDeath.*)

# A SIGTERM after a death (as mpirun sends it): ordo's message names the dead.
ordo_add_mesh_test(NAME mpi_mesh_sigterm_names_the_dead
  CHECKS --expect 2 "${pass_line}"
         --expect 2 "ordo: process [01] \\(host [^)]+\\): stopped by mpirun \\(SIGTERM\\) because another process ended. ordo saw: (.* )?process 2 \\(host [^,]+, pid [0-9]+\\) died: its connection closed without a goodbye"
  ARGS ${survive_deaths} -np 3 -x ORDO_TEST_MESH_DEATH=sigkill -x ORDO_TEST_MESH_AFTER=sigterm ${mesh_test}
       --gtest_filter=ProcessMeshDeath.*)
ordo_add_mesh_test(NAME mpi_mesh_sigterm_with_no_failure
  CHECKS --expect 1 "${pass_line} process 0 end"
         --expect 1 "ordo: process 0 \\(host [^)]+\\): stopped by mpirun \\(SIGTERM\\) because another process ended. ordo saw no failure"
  ARGS ${survive_deaths} -np 2 -x ORDO_TEST_MESH_SIGTERM=1 ${mesh_test} --gtest_filter=ProcessMeshSigterm.*)

# Every process ends cleanly: no death, MPI_Finalize everywhere.
ordo_add_mesh_test(NAME mpi_mesh_clean_exit
  CHECKS --status 0 --expect 0 "exiting improperly|died|without MPI_Finalize"
  ARGS -np 3 ${mesh_test} --gtest_filter=ProcessMeshCleanExit.*)
