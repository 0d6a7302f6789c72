/* The reference for bench/allreduce_bench.cc and bench/mpi_backend_bench.cc:
 * Open MPI's MPI_Allreduce (float32 sum) on the same sizes, run as separate
 * processes on this machine. The sizes in bytes are the arguments (none:
 * 1 KiB to 64 MiB by 4). Prints "size_bytes seconds_per_allreduce" lines
 * (median of repetitions, slowest rank), then "latency_1k seconds" for
 * back-to-back 1 KiB calls. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double time_per_call(float* in, float* out, int count, int iterations) {
  enum { kReps = 7 };
  double samples[kReps];
  for (int r = 0; r < kReps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int i = 0; i < iterations; ++i) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double mine = (MPI_Wtime() - start) / iterations, slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    samples[r] = slowest;
  }
  qsort(samples, kReps, sizeof(double), compare);
  return samples[kReps / 2];
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long sizes[64], count = 0;
  for (int i = 1; i < argc && count < 64; ++i) sizes[count++] = atol(argv[i]);
  if (argc == 1) {
    for (long bytes = 1024; bytes <= 64L << 20; bytes *= 4) sizes[count++] = bytes;
  }
  long max_bytes = 1024;
  for (long i = 0; i < count; ++i) {
    if (sizes[i] <= 0 || sizes[i] % 4 != 0 || sizes[i] > (1L << 32)) {
      if (rank == 0) fprintf(stderr, "mpi_allreduce: a size must be a positive multiple of 4 bytes, not %s\n", argv[i + 1]);
      MPI_Finalize();
      return 2;
    }
    if (sizes[i] > max_bytes) max_bytes = sizes[i];
  }
  float* in = malloc(max_bytes);
  float* out = malloc(max_bytes);
  for (long i = 0; i < max_bytes / 4; ++i) in[i] = (float)(i % 97) + rank;
  memset(out, 0, max_bytes);
  for (long s = 0; s < count; ++s) {
    const long bytes = sizes[s];
    long iterations = (32L << 20) / bytes;
    if (iterations < 3) iterations = 3;
    if (iterations > 1000) iterations = 1000;
    time_per_call(in, out, (int)(bytes / 4), 2); /* warm */
    double t = time_per_call(in, out, (int)(bytes / 4), (int)iterations);
    if (rank == 0) printf("%ld %.9g\n", bytes, t);
    fflush(stdout);
  }
  time_per_call(in, out, 256, 100); /* warm */
  double latency = time_per_call(in, out, 256, 100);
  if (rank == 0) printf("latency_1k %.9g\n", latency);
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
