
int kernel_atax(long M, long N, const double *restrict A, const double *restrict x, double *restrict y, double *restrict tmp)
{
    const long pc_ext0_0 = M;
    const long pc_ext0_1 = N;
    const long pc_ext1_0 = N;
    const long pc_ext2_0 = N;
    const long pc_ext3_0 = M;
    pc_fault = 0;
    const long pc_ub0 = N;
    #pragma omp parallel for if(pc_ub0 >= 32768)
    for (long c0 = 0; c0 < pc_ub0; c0++) {
        { /* S0 */
            const long i = c0;
            y[i] = 0e0;
        }
    }
    const long pc_ub1 = pc_floord((M - 1), 4);
    for (long c0 = 0; c0 <= pc_ub1; c0++) {
        const long pc_ub2 = pc_min((M - 1), ((4 * c0) + 3));
        #pragma omp simd
        for (long c1 = (4 * c0); c1 <= pc_ub2; c1++) {
            { /* S1 */
                const long i = c1;
                tmp[i] = 0e0;
            }
        }
        { /* S2: accumulators across c1 */
            const long pc_ub3 = N;
            const long pc_n4 = pc_min(4, pc_min((M - 1), ((4 * c0) + 3)) - (4 * c0) + 1);
            if (0 < pc_ub3 && pc_n4 > 0) {
                if (pc_n4 == 4) {
                    double pc_acc5[4];
                    #pragma omp simd
                    for (long pc_o6 = 0; pc_o6 < 4; pc_o6++) {
                        const long c2 = (4 * c0) + pc_o6;
                        { const long i = c2; pc_acc5[pc_o6] = tmp[i]; }
                    }
                    for (long c1 = 0; c1 < pc_ub3; c1++) {
                        #pragma omp simd
                        for (long pc_o6 = 0; pc_o6 < 4; pc_o6++) {
                            const long c2 = (4 * c0) + pc_o6;
                            { /* S2 */
                                const long i = c2, j = c1;
                                pc_acc5[pc_o6] = (pc_acc5[pc_o6] + (A[(i) * pc_ext0_1 + j] * x[j]));
                            }
                        }
                    }
                    #pragma omp simd
                    for (long pc_o6 = 0; pc_o6 < 4; pc_o6++) {
                        const long c2 = (4 * c0) + pc_o6;
                        { const long i = c2; tmp[i] = pc_acc5[pc_o6]; }
                    }
                } else {
                    double pc_acc7[4];
                    #pragma omp simd
                    for (long pc_o8 = 0; pc_o8 < pc_n4; pc_o8++) {
                        const long c2 = (4 * c0) + pc_o8;
                        { const long i = c2; pc_acc7[pc_o8] = tmp[i]; }
                    }
                    for (long c1 = 0; c1 < pc_ub3; c1++) {
                        #pragma omp simd
                        for (long pc_o8 = 0; pc_o8 < pc_n4; pc_o8++) {
                            const long c2 = (4 * c0) + pc_o8;
                            { /* S2 */
                                const long i = c2, j = c1;
                                pc_acc7[pc_o8] = (pc_acc7[pc_o8] + (A[(i) * pc_ext0_1 + j] * x[j]));
                            }
                        }
                    }
                    #pragma omp simd
                    for (long pc_o8 = 0; pc_o8 < pc_n4; pc_o8++) {
                        const long c2 = (4 * c0) + pc_o8;
                        { const long i = c2; tmp[i] = pc_acc7[pc_o8]; }
                    }
                }
            }
        }
        const long pc_ub9 = pc_min((M - 1), ((4 * c0) + 3));
        for (long c1 = (4 * c0); c1 <= pc_ub9; c1++) {
            const long pc_ub10 = N;
            #pragma omp simd
            for (long c2 = 0; c2 < pc_ub10; c2++) {
                { /* S3 */
                    const long i = c1, j = c2;
                    y[j] = (y[j] + (A[(i) * pc_ext0_1 + j] * tmp[i]));
                }
            }
        }
    }
    return pc_fault;
}
