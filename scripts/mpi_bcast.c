/* MPI_Bcast of one message size, the yardstick `harness bench bcast` holds RDMC-over-tcp
 * against. Rank 0 broadcasts SIZE bytes once untimed (warm-up), then REPEAT times back to back,
 * timed from a barrier until every rank has the last (a second barrier), as RDMC's stream is
 * timed until every receiver has its last message. Prints one line:
 *   mpi_bcast ranks=N bytes=SIZE repeat=R seconds=MEAN gbps=SIZE*8/MEAN
 * where MEAN is the timed span over REPEAT.
 * Build: mpicc -O2 -o mpi_bcast scripts/mpi_bcast.c */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MPI_Bcast counts are ints: one broadcast goes in pieces of at most 1 GiB. */
static void bcast(char *buf, long long bytes) {
    for (long long at = 0; at < bytes; at += 1 << 30) {
        long long n = bytes - at < (1 << 30) ? bytes - at : (1 << 30);
        MPI_Bcast(buf + at, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    if (argc != 3) {
        if (rank == 0) fprintf(stderr, "usage: mpi_bcast BYTES REPEAT\n");
        MPI_Finalize();
        return 2;
    }
    long long bytes = atoll(argv[1]);
    int repeat = atoi(argv[2]);
    char *buf = malloc(bytes > 0 ? bytes : 1);
    if (!buf) {
        fprintf(stderr, "rank %d: cannot allocate %lld bytes\n", rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(buf, rank == 0 ? 0x5a : 0, bytes);
    bcast(buf, bytes); /* warm-up */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < repeat; i++) bcast(buf, bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    double total = MPI_Wtime() - t0;
    /* Every rank checks what it received. */
    for (long long j = 0; j < bytes; j++) {
        if (buf[j] != 0x5a) {
            fprintf(stderr, "rank %d: byte %lld differs\n", rank, j);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    if (rank == 0) {
        double mean = total / repeat;
        printf("mpi_bcast ranks=%d bytes=%lld repeat=%d seconds=%.6f gbps=%.3f\n", ranks, bytes,
               repeat, mean, bytes * 8.0 / mean / 1e9);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
