
int kernel_gemm(long NI, long NJ, long NK, double alpha, double beta, double *restrict C, const double *restrict A, const double *restrict B)
{
    const long pc_ext2_0 = NI;
    const long pc_ext2_1 = NJ;
    const long pc_ext3_0 = NI;
    const long pc_ext3_1 = NK;
    const long pc_ext4_0 = NK;
    const long pc_ext4_1 = NJ;
    pc_fault = 0;
    const long pc_ub0 = NI;
    #pragma omp parallel for
    for (long c0 = 0; c0 < pc_ub0; c0++) {
        const long pc_ub1 = NJ;
        #pragma omp simd
        for (long c1 = 0; c1 < pc_ub1; c1++) {
            { /* S0 */
                const long i = c0, j = c1;
                C[(i) * pc_ext2_1 + j] = (C[(i) * pc_ext2_1 + j] * beta);
            }
        }
    }
    const long pc_ub2 = pc_floord((NI - 1), 504);
    #pragma omp parallel for
    for (long c0 = 0; c0 <= pc_ub2; c0++) {
        const long pc_ub3 = pc_floord((NJ - 1), 256);
        for (long c1 = 0; c1 <= pc_ub3; c1++) {
            const long pc_ub4 = pc_floord((NK - 1), 256);
            for (long c2 = 0; c2 <= pc_ub4; c2++) {
                { /* packed panels, reused across c3 */
                    double (*restrict pc_pk5)[256][8] = malloc(sizeof(double) * 32 * 256 * 8);
                    if (pc_pk5) {
                        if ((84 * c0) <= pc_min(((84 * c0) + 83), ((NI - 1) / 6))) {
                            const long pc_ub6 = pc_min(((32 * c1) + 31), ((NJ - 1) / 8));
                            for (long c4 = (32 * c1); c4 <= pc_ub6; c4++) {
                                const long pc_ub7 = pc_min((NK - 1), ((256 * c2) + 255));
                                for (long c5 = (256 * c2); c5 <= pc_ub7; c5++) {
                                    const long pc_n8 = pc_min(8, pc_min((NJ - 1), ((8 * c4) + 7)) - (8 * c4) + 1);
                                    for (long pc_o9 = 0; pc_o9 < pc_n8; pc_o9++) {
                                        const long c7 = (8 * c4) + pc_o9;
                                        pc_pk5[c4 - (32 * c1)][c5 - (256 * c2)][c7 - (8 * c4)] = B[(c5) * pc_ext4_1 + c7];
                                    }
                                }
                            }
                        }
                        const long pc_ub10 = pc_min(((84 * c0) + 83), ((NI - 1) / 6));
                        for (long c3 = (84 * c0); c3 <= pc_ub10; c3++) {
                            { /* packed panels, reused across c4 */
                                double (*restrict pc_pk11)[6] = malloc(sizeof(double) * 256 * 6);
                                if (pc_pk11) {
                                    if ((32 * c1) <= pc_min(((32 * c1) + 31), ((NJ - 1) / 8))) {
                                        const long pc_ub12 = pc_min((NK - 1), ((256 * c2) + 255));
                                        for (long c5 = (256 * c2); c5 <= pc_ub12; c5++) {
                                            const long pc_n13 = pc_min(6, pc_min((NI - 1), ((6 * c3) + 5)) - (6 * c3) + 1);
                                            for (long pc_o14 = 0; pc_o14 < pc_n13; pc_o14++) {
                                                const long c6 = (6 * c3) + pc_o14;
                                                pc_pk11[c5 - (256 * c2)][c6 - (6 * c3)] = (alpha * A[(c6) * pc_ext3_1 + c5]);
                                            }
                                        }
                                    }
                                    const long pc_ub15 = pc_min(((32 * c1) + 31), ((NJ - 1) / 8));
                                    for (long c4 = (32 * c1); c4 <= pc_ub15; c4++) {
                                        { /* S1: accumulators across c5 */
                                            const long pc_ub16 = pc_min((NK - 1), ((256 * c2) + 255));
                                            const long pc_n17 = pc_min(6, pc_min((NI - 1), ((6 * c3) + 5)) - (6 * c3) + 1);
                                            const long pc_n18 = pc_min(8, pc_min((NJ - 1), ((8 * c4) + 7)) - (8 * c4) + 1);
                                            if ((256 * c2) <= pc_ub16 && pc_n17 > 0 && pc_n18 > 0) {
                                                if (pc_n17 == 6 && pc_n18 == 8) {
                                                    double pc_acc19[6][8];
                                                    for (long pc_o20 = 0; pc_o20 < 6; pc_o20++) {
                                                        const long c6 = (6 * c3) + pc_o20;
                                                        #pragma omp simd
                                                        for (long pc_o21 = 0; pc_o21 < 8; pc_o21++) {
                                                            const long c7 = (8 * c4) + pc_o21;
                                                            { const long i = c6, j = c7; pc_acc19[pc_o20][pc_o21] = C[(i) * pc_ext2_1 + j]; }
                                                        }
                                                    }
                                                    for (long c5 = (256 * c2); c5 <= pc_ub16; c5++) {
                                                        for (long pc_o20 = 0; pc_o20 < 6; pc_o20++) {
                                                            const long c6 = (6 * c3) + pc_o20;
                                                            #pragma omp simd
                                                            for (long pc_o21 = 0; pc_o21 < 8; pc_o21++) {
                                                                const long c7 = (8 * c4) + pc_o21;
                                                                { /* S1 */
                                                                    const long i = c6, k = c5, j = c7;
                                                                    pc_acc19[pc_o20][pc_o21] = (pc_acc19[pc_o20][pc_o21] + (pc_pk11[c5 - (256 * c2)][c6 - (6 * c3)] * pc_pk5[c4 - (32 * c1)][c5 - (256 * c2)][c7 - (8 * c4)]));
                                                                }
                                                            }
                                                        }
                                                    }
                                                    for (long pc_o20 = 0; pc_o20 < 6; pc_o20++) {
                                                        const long c6 = (6 * c3) + pc_o20;
                                                        #pragma omp simd
                                                        for (long pc_o21 = 0; pc_o21 < 8; pc_o21++) {
                                                            const long c7 = (8 * c4) + pc_o21;
                                                            { const long i = c6, j = c7; C[(i) * pc_ext2_1 + j] = pc_acc19[pc_o20][pc_o21]; }
                                                        }
                                                    }
                                                } else {
                                                    double pc_acc22[6][8];
                                                    for (long pc_o23 = 0; pc_o23 < pc_n17; pc_o23++) {
                                                        const long c6 = (6 * c3) + pc_o23;
                                                        #pragma omp simd
                                                        for (long pc_o24 = 0; pc_o24 < pc_n18; pc_o24++) {
                                                            const long c7 = (8 * c4) + pc_o24;
                                                            { const long i = c6, j = c7; pc_acc22[pc_o23][pc_o24] = C[(i) * pc_ext2_1 + j]; }
                                                        }
                                                    }
                                                    for (long c5 = (256 * c2); c5 <= pc_ub16; c5++) {
                                                        for (long pc_o23 = 0; pc_o23 < pc_n17; pc_o23++) {
                                                            const long c6 = (6 * c3) + pc_o23;
                                                            #pragma omp simd
                                                            for (long pc_o24 = 0; pc_o24 < pc_n18; pc_o24++) {
                                                                const long c7 = (8 * c4) + pc_o24;
                                                                { /* S1 */
                                                                    const long i = c6, k = c5, j = c7;
                                                                    pc_acc22[pc_o23][pc_o24] = (pc_acc22[pc_o23][pc_o24] + (pc_pk11[c5 - (256 * c2)][c6 - (6 * c3)] * pc_pk5[c4 - (32 * c1)][c5 - (256 * c2)][c7 - (8 * c4)]));
                                                                }
                                                            }
                                                        }
                                                    }
                                                    for (long pc_o23 = 0; pc_o23 < pc_n17; pc_o23++) {
                                                        const long c6 = (6 * c3) + pc_o23;
                                                        #pragma omp simd
                                                        for (long pc_o24 = 0; pc_o24 < pc_n18; pc_o24++) {
                                                            const long c7 = (8 * c4) + pc_o24;
                                                            { const long i = c6, j = c7; C[(i) * pc_ext2_1 + j] = pc_acc22[pc_o23][pc_o24]; }
                                                        }
                                                    }
                                                }
                                            }
                                        }
                                    }
                                } else {
                                    pc_set_fault(PC_FAULT_OUT_OF_MEMORY);
                                }
                                free(pc_pk11);
                            }
                        }
                    } else {
                        pc_set_fault(PC_FAULT_OUT_OF_MEMORY);
                    }
                    free(pc_pk5);
                }
            }
        }
    }
    return pc_fault;
}
