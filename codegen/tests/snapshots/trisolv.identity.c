
int kernel_trisolv(long N, const double *restrict L, double *restrict x, const double *restrict b)
{
    const long pc_ext0_0 = N;
    const long pc_ext0_1 = N;
    const long pc_ext1_0 = N;
    const long pc_ext2_0 = N;
    pc_fault = 0;
    const long pc_ub0 = N;
    for (long c0 = 0; c0 < pc_ub0; c0++) {
        { /* S0 */
            const long i = c0;
            x[i] = b[i];
        }
        if (0 < c0) { /* x[c0] in locals across c1 */
            double pc_s1 = x[c0];
            const long pc_ub2 = c0;
            for (long c1 = 0; c1 < pc_ub2; c1++) {
                { /* S1 */
                    const long i = c0, j = c1;
                    pc_s1 = (pc_s1 - (L[(i) * pc_ext0_1 + j] * x[j]));
                }
            }
            x[c0] = pc_s1;
        }
        { /* S2 */
            const long i = c0;
            x[i] = (x[i] / L[(i) * pc_ext0_1 + i]);
        }
    }
    return pc_fault;
}
