/* A hand-written packed gemm in the structure polyc generates (exact arithmetic: no FMA, the
 * same `acc + (alpha * A[i][k]) * B[k][j]` per update), for comparing the generated kernel
 * with what its structure can reach (docs/performance.md, "gemm against OpenBLAS").
 *
 *   gcc -O3 -march=native -fopenmp -std=gnu99 -ffp-contract=off -fno-fast-math \
 *       -DMR=6 -DNR=8 scripts/gemm_packed_by_hand.c -o gemm_by_hand
 *   OMP_NUM_THREADS=2 ./gemm_by_hand MC NC KC    # e.g. 504 256 256 (polyc's tiles on Zen 3)
 *
 * With -DOPENBLAS (and -lopenblas), `./gemm_by_hand openblas` times cblas_dgemm on the same
 * data instead, for comparisons in the same minute.
 *
 * PolyBench's LARGE sizes (1000 x 1100 x 1200). Tiles of MC rows (one per thread when MC is
 * half the rows), NC columns and KC steps of k. In each tile, the KC x NC block of B is
 * copied into a panel ordered [column block][k][column] before the loop over row blocks;
 * for each block of MR rows, the products alpha * A[i][k] are computed once into a panel
 * ordered [k][row] before the loop over column blocks; then MR x NR blocks of C are
 * accumulated in locals across k. Partial blocks are skipped (timing only). Prints three
 * timings. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef OPENBLAS
#include <cblas.h>
#endif

#ifndef MR
#define MR 6
#endif
#ifndef NR
#define NR 8
#endif

static inline void block(long K, const double *restrict pa, const double *restrict pb,
                         double *restrict C, long ldc) {
    double acc[MR][NR];
    for (int r = 0; r < MR; r++)
        for (int c = 0; c < NR; c++) acc[r][c] = C[r * ldc + c];
    for (long k = 0; k < K; k++)
        for (int r = 0; r < MR; r++) {
#pragma omp simd
            for (int c = 0; c < NR; c++) acc[r][c] = acc[r][c] + (pa[k * MR + r] * pb[k * NR + c]);
        }
    for (int r = 0; r < MR; r++)
        for (int c = 0; c < NR; c++) C[r * ldc + c] = acc[r][c];
}

int main(int argc, char **argv) {
    const long NI = 1000, NJ = 1100, NK = 1200;
    double *A = malloc(8 * NI * NK), *B = malloc(8 * NK * NJ), *C = malloc(8 * NI * NJ);
    if (!A || !B || !C) return 2;
    for (long i = 0; i < NI * NK; i++) A[i] = (i % 7) * 0.1;
    for (long i = 0; i < NK * NJ; i++) B[i] = (i % 5) * 0.1;
    for (long i = 0; i < NI * NJ; i++) C[i] = 1;
    const double alpha = 1.5;
#ifdef OPENBLAS
    if (argc == 2 && strcmp(argv[1], "openblas") == 0) {
        for (int run = 0; run < 3; run++) {
            double t = omp_get_wtime();
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, NI, NJ, NK, alpha, A, NK, B,
                        NJ, 1.0, C, NJ);
            printf("%.4f ", omp_get_wtime() - t);
        }
        printf(" openblas\n");
        return 0;
    }
#endif
    if (argc != 4) {
        fprintf(stderr, "usage: %s MC NC KC\n", argv[0]);
        return 2;
    }
    const long MC = atol(argv[1]), NC = atol(argv[2]), KC = atol(argv[3]);
    if (MC < MR || NC < NR || KC < 1) return 2;
    for (int run = 0; run < 3; run++) {
        double t = omp_get_wtime();
#pragma omp parallel
        {
            double *pb = malloc(8 * KC * NC), *pa = malloc(8 * KC * MR);
#pragma omp for schedule(static)
            for (long i0 = 0; i0 < NI; i0 += MC)
                for (long j0 = 0; j0 < NJ; j0 += NC)
                    for (long k0 = 0; k0 < NK; k0 += KC) {
                        long kn = k0 + KC < NK ? KC : NK - k0;
                        long ie = i0 + MC < NI ? i0 + MC : NI, je = j0 + NC < NJ ? j0 + NC : NJ;
                        for (long j = j0; j + NR <= je; j += NR)
                            for (long k = 0; k < kn; k++)
                                for (int c = 0; c < NR; c++)
                                    pb[(j - j0) * KC + k * NR + c] = B[(k0 + k) * NJ + j + c];
                        for (long i = i0; i + MR <= ie; i += MR) {
                            for (long k = 0; k < kn; k++)
                                for (int r = 0; r < MR; r++)
                                    pa[k * MR + r] = alpha * A[(i + r) * NK + k0 + k];
                            for (long j = j0; j + NR <= je; j += NR)
                                block(kn, pa, pb + (j - j0) * KC, C + i * NJ + j, NJ);
                        }
                    }
            free(pb);
            free(pa);
        }
        printf("%.4f ", omp_get_wtime() - t);
    }
    printf(" MR %d NR %d MC %ld NC %ld KC %ld\n", MR, NR, MC, NC, KC);
    return 0;
}
