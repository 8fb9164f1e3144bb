
int kernel_jacobi_2d(long TSTEPS, long N, double *restrict A, double *restrict B)
{
    const long pc_ext0_0 = N;
    const long pc_ext0_1 = N;
    const long pc_ext1_0 = N;
    const long pc_ext1_1 = N;
    pc_fault = 0;
    #pragma omp parallel
    {
        const long pc_ub0 = TSTEPS;
        for (long c0 = 0; c0 < pc_ub0; c0++) {
            const long pc_ub1 = (N - 1);
            #pragma omp for
            for (long c1 = 1; c1 < pc_ub1; c1++) {
                const long pc_ub2 = (N - 1);
                #pragma omp simd
                for (long c2 = 1; c2 < pc_ub2; c2++) {
                    { /* S0 */
                        const long t = c0, i = c1, j = c2;
                        B[(i) * pc_ext1_1 + j] = (2e-1 * ((((A[(i) * pc_ext0_1 + j] + A[(i) * pc_ext0_1 + (j - (1L))]) + A[(i) * pc_ext0_1 + ((1L) + j)]) + A[(((1L) + i)) * pc_ext0_1 + j]) + A[((i - (1L))) * pc_ext0_1 + j]));
                    }
                }
            }
            const long pc_ub3 = (N - 1);
            #pragma omp for
            for (long c1 = 1; c1 < pc_ub3; c1++) {
                const long pc_ub4 = (N - 1);
                #pragma omp simd
                for (long c2 = 1; c2 < pc_ub4; c2++) {
                    { /* S1 */
                        const long t = c0, i = c1, j = c2;
                        A[(i) * pc_ext0_1 + j] = (2e-1 * ((((B[(i) * pc_ext1_1 + j] + B[(i) * pc_ext1_1 + (j - (1L))]) + B[(i) * pc_ext1_1 + ((1L) + j)]) + B[(((1L) + i)) * pc_ext1_1 + j]) + B[((i - (1L))) * pc_ext1_1 + j]));
                    }
                }
            }
        }
    }
    return pc_fault;
}
