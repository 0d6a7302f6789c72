# ordo._torch: ordo as the runtime under PyTorch's `xla` device (src/torch_device/).
# Optional, as MPI is: without Debian's PyTorch headers and libraries
# (libtorch-dev, python3-torch) the build goes on without it and says so.
find_path(ORDO_TORCH_INCLUDE_DIR torch/library.h)
find_library(ORDO_TORCH_CPU_LIBRARY torch_cpu)
find_library(ORDO_C10_LIBRARY c10)
find_library(ORDO_TORCH_PYTHON_LIBRARY torch_python)
if(ORDO_TORCH_INCLUDE_DIR AND ORDO_TORCH_CPU_LIBRARY AND ORDO_C10_LIBRARY AND ORDO_TORCH_PYTHON_LIBRARY)
  message(STATUS "ordo: PyTorch xla device: yes (${ORDO_TORCH_CPU_LIBRARY})")
  set(ORDO_TORCH_DEVICE ON)
  file(GLOB ORDO_TORCH_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/torch_device/*.cc)
  pybind11_add_module(ordo_torch ${ORDO_TORCH_SOURCES})
  set_target_properties(ordo_torch PROPERTIES
    OUTPUT_NAME _torch
    LIBRARY_OUTPUT_DIRECTORY ${ORDO_PYTHON_PACKAGE_DIR}
    INSTALL_RPATH "$ORIGIN" BUILD_RPATH "$ORIGIN")
  target_include_directories(ordo_torch PRIVATE src)
  target_include_directories(ordo_torch SYSTEM PRIVATE ${ORDO_TORCH_INCLUDE_DIR})
  # PyTorch's headers: their own warnings are not ours (SYSTEM above).
  target_compile_options(ordo_torch PRIVATE -Wall -Wextra)
  target_compile_definitions(ordo_torch PRIVATE _GLIBCXX_USE_CXX11_ABI=1)
  target_link_libraries(ordo_torch PRIVATE ordo_shared ${ORDO_TORCH_PYTHON_LIBRARY}
                        ${ORDO_TORCH_CPU_LIBRARY} ${ORDO_C10_LIBRARY})
  install(TARGETS ordo_torch LIBRARY DESTINATION ${ORDO_PYTHON_INSTALL_DIR}/ordo)
else()
  message(STATUS "ordo: PyTorch xla device: no (apt-get install libtorch-dev python3-torch)")
  set(ORDO_TORCH_DEVICE OFF)
endif()
