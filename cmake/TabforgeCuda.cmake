# Decides whether the CUDA backend is built. TABFORGE_CUDA=AUTO turns it on when a CUDA
# compiler is found; ON requires one; OFF never looks. Sets TABFORGE_WITH_CUDA.
include(CheckLanguage)
set(TABFORGE_WITH_CUDA OFF)
if(NOT TABFORGE_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(TABFORGE_WITH_CUDA ON)
  elseif(TABFORGE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TABFORGE_CUDA=ON but no CUDA compiler (nvcc) was found. Install the "
                        "CUDA toolkit and put nvcc on PATH, or configure with -DTABFORGE_CUDA=OFF.")
  endif()
endif()

if(TABFORGE_WITH_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # The GPUs users have: Turing, Ampere (data centre and consumer), Ada, Hopper.
    set(CMAKE_CUDA_ARCHITECTURES "75;80;86;89;90")
  endif()
  enable_language(CUDA)
  # CMake 3.25 does not know nvcc's C++20 flag: kernels (.cu) are C++17 and include only
  # headers of that dialect; the host side of the CUDA backend is C++20 .cc files calling them.
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)
  message(STATUS "tabforge: CUDA backend ON (architectures ${CMAKE_CUDA_ARCHITECTURES})")
else()
  message(STATUS "tabforge: CUDA backend OFF (CPU-only build)")
endif()

# tabforge_cuda_target(target): flags of targets with kernels. Multiplies are never fused into
# adds (-fmad=false), so device arithmetic rounds as the host's does and the CUDA backend
# computes the CPU's bits (see core/portable_math.h).
function(tabforge_cuda_target target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-fmad=false --expt-relaxed-constexpr -Xcudafe --diag_suppress=20012>)
  target_link_libraries(${target} PRIVATE tabforge_device)
endfunction()

# tabforge_cuda_sources(target CUDA file... [CPU_ONLY file...]): in the CUDA build the CUDA
# files join `target` with tabforge_cuda_target's flags; in a CPU-only build the CPU_ONLY files,
# which answer "no CUDA in this build", join instead. cuBLAS is not linked: the device library
# opens it at run time (device/cublas_library.h).
function(tabforge_cuda_sources target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "CUDA;CPU_ONLY")
  if(TABFORGE_WITH_CUDA)
    target_sources(${target} PRIVATE ${arg_CUDA})
    tabforge_cuda_target(${target})
  elseif(arg_CPU_ONLY)
    target_sources(${target} PRIVATE ${arg_CPU_ONLY})
  endif()
endfunction()
