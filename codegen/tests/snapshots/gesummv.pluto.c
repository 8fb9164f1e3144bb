
int kernel_gesummv(long N, double alpha, double beta, const double *restrict A, const double *restrict B, double *restrict tmp, const double *restrict x, double *restrict y)
{
    const long pc_ext2_0 = N;
    const long pc_ext2_1 = N;
    const long pc_ext3_0 = N;
    const long pc_ext3_1 = N;
    const long pc_ext4_0 = N;
    const long pc_ext5_0 = N;
    const long pc_ext6_0 = N;
    pc_fault = 0;
    const long pc_ub0 = N;
    #pragma omp parallel for
    for (long c0 = 0; c0 < pc_ub0; c0++) {
        { /* S0 */
            const long i = c0;
            tmp[i] = 0e0;
        }
        { /* S1 */
            const long i = c0;
            y[i] = 0e0;
        }
        if (0 < N) { /* tmp[c0], y[c0] in locals across c1 */
            double pc_s1 = tmp[c0];
            double pc_s2 = y[c0];
            const long pc_ub3 = N;
            for (long c1 = 0; c1 < pc_ub3; c1++) {
                { /* S2 */
                    const long i = c0, j = c1;
                    pc_s1 = ((A[(i) * pc_ext2_1 + j] * x[j]) + pc_s1);
                }
                { /* S3 */
                    const long i = c0, j = c1;
                    pc_s2 = ((B[(i) * pc_ext3_1 + j] * x[j]) + pc_s2);
                }
            }
            tmp[c0] = pc_s1;
            y[c0] = pc_s2;
        }
        { /* S4 */
            const long i = c0;
            y[i] = ((alpha * tmp[i]) + (beta * y[i]));
        }
    }
    return pc_fault;
}
