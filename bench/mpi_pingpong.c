/*
 * mpi_pingpong.c — the time of one pipeline hop (issue 21, bench/RESULTS.md): rank 0
 * and rank 1 bounce a message of `bytes` bytes (a decode step's hidden state:
 * hidden_size x 4) `reps` times; one hop = half the round trip, the median of 5 runs.
 * Built only with MPI. Usage: mpirun -np 2 mpi_pingpong [bytes [reps]]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int bytes = argc > 1 ? atoi(argv[1]) : 2048, reps = argc > 2 ? atoi(argv[2]) : 2000;
    char *buf = calloc((size_t)bytes > 0 ? (size_t)bytes : 1, 1);
    double runs[5];
    for (int k = 0; k < 5 && size >= 2; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        for (int i = 0; i < reps; i++) {
            if (rank == 0) {
                MPI_Send(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            }
        }
        runs[k] = (MPI_Wtime() - t) / reps / 2;
    }
    if (rank == 0 && size >= 2) {
        qsort(runs, 5, sizeof runs[0], cmp);
        printf("one hop of %d bytes: %.2f us (median of 5 x %d round trips; %.1f MB/s)\n", bytes,
               runs[2] * 1e6, reps, bytes / runs[2] / 1e6);
    } else if (rank == 0) {
        printf("mpi_pingpong: needs 2 processes (mpirun -np 2)\n");
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
