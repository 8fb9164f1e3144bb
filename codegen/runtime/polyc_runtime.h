/* polyc runtime: helpers of the generated kernels (index arithmetic, exact element-type
 * arithmetic, faults). Every value semantics here mirrors poly::interp (see docs/codegen.md). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PC_FAULT_DIVISION_BY_ZERO 1
#define PC_FAULT_BAD_CONVERSION 2
#define PC_FAULT_OUT_OF_BOUNDS 3
#define PC_FAULT_OUT_OF_MEMORY 4

/* The first fault of the current kernel call (0: none); set from any thread. */
static int pc_fault;

static void pc_set_fault(int code)
{
    int none = 0;
    __atomic_compare_exchange_n(&pc_fault, &none, code, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* ---- index arithmetic (long) ---- */
static inline long pc_floord(long a, long b) { long q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
static inline long pc_ceild(long a, long b) { long q = a / b; return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q; }
static inline long pc_mod(long a, long b) { long r = a % b; return r < 0 ? r + b : r; }
static inline long pc_min(long a, long b) { return a < b ? a : b; }
static inline long pc_max(long a, long b) { return a > b ? a : b; }
/* An index checked against its extent (accesses not proven in bounds). */
static inline long pc_check(long i, long extent)
{
    if (i < 0 || i >= extent) { pc_set_fault(PC_FAULT_OUT_OF_BOUNDS); return 0; }
    return i;
}

/* ---- f16 / bf16: values are computed as float holding a value of the type ---- */
/* Rounds x once to the binary format with p significand bits and normal exponents
 * emin..emax (ties to even, gradual underflow, overflow to infinity). */
static inline double pc_round_format(double x, int p, int emin, int emax)
{
    if (!isfinite(x) || x == 0.0) return x;
    if (fabs(x) < 2.2250738585072014e-308) return copysign(0.0, x);
    int e;
    frexp(x, &e); /* x = f * 2^e, f in [0.5, 1): the unbiased exponent is e - 1 */
    int quantum = ((e - 1) > emin ? (e - 1) : emin) - (p - 1);
    double r = ldexp(nearbyint(ldexp(x, -quantum)), quantum);
    double max = ldexp(2.0 - ldexp(1.0, 1 - p), emax);
    return fabs(r) > max ? copysign(INFINITY, x) : r;
}
static inline float pc_rf16(double x) { return (float)pc_round_format(x, 11, -14, 15); }
static inline float pc_rbf16(double x) { return (float)pc_round_format(x, 8, -126, 127); }

/* bf16 storage: the upper half of a float's bits (values stored are exact). */
typedef uint16_t pc_bf16_t;
static inline float pc_bf16_load(pc_bf16_t b) { uint32_t u = (uint32_t)b << 16; float f; memcpy(&f, &u, 4); return f; }
static inline pc_bf16_t pc_bf16_store(float f)
{
    if (isnan(f)) return 0x7fc0;
    uint32_t u; memcpy(&u, &f, 4); return (pc_bf16_t)(u >> 16);
}

/* f16 storage: _Float16 where the compiler has it, else its bits in a uint16_t. */
#ifdef __FLT16_MAX__
typedef _Float16 pc_f16_t;
static inline float pc_f16_load(pc_f16_t h) { return (float)h; }
static inline pc_f16_t pc_f16_store(float f) { return (pc_f16_t)f; }
#else
typedef uint16_t pc_f16_t;
static inline float pc_f16_load(pc_f16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 0x400), e - 25);
    return (h & 0x8000) ? -v : v;
}
static inline pc_f16_t pc_f16_store(float f)
{
    uint16_t s = signbit(f) ? 0x8000 : 0;
    float a = fabsf(f);
    if (isnan(f)) return 0x7e00;
    if (isinf(f)) return s | 0x7c00;
    if (a < 6.103515625e-05f) return s | (uint16_t)ldexpf(a, 24);
    int e; float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    return s | (uint16_t)((e + 14) << 10) | (uint16_t)(ldexpf(m, 11) - 1024.0f);
}
#endif

/* ---- floats: max/min ignore a NaN operand and keep the first on ties ---- */
static inline double pc_fmax_d(double a, double b) { return (isnan(a) || b > a) ? b : a; }
static inline double pc_fmin_d(double a, double b) { return (isnan(a) || b < a) ? b : a; }
static inline float pc_fmax_f(float a, float b) { return (isnan(a) || b > a) ? b : a; }
static inline float pc_fmin_f(float a, float b) { return (isnan(a) || b < a) ? b : a; }

/* ---- integers: wrapping arithmetic, truncating division ---- */
static inline int32_t pc_div_i32(int32_t a, int32_t b)
{
    if (b == 0) { pc_set_fault(PC_FAULT_DIVISION_BY_ZERO); return 0; }
    if (a == INT32_MIN && b == -1) return INT32_MIN;
    return a / b;
}
static inline int8_t pc_div_i8(int8_t a, int8_t b)
{
    if (b == 0) { pc_set_fault(PC_FAULT_DIVISION_BY_ZERO); return 0; }
    return (int8_t)(a / b);
}
static inline int32_t pc_abs_i32(int32_t a) { return a < 0 ? (int32_t)(0u - (uint32_t)a) : a; }
static inline int8_t pc_abs_i8(int8_t a) { return a < 0 ? (int8_t)(uint8_t)(0u - (uint32_t)a) : a; }
static inline int32_t pc_max_i32(int32_t a, int32_t b) { return a > b ? a : b; }
static inline int32_t pc_min_i32(int32_t a, int32_t b) { return a < b ? a : b; }
/* Float to integer: truncation, a fault when it does not fit. */
static inline int32_t pc_to_i32(double x)
{
    double t = trunc(x);
    if (!(t >= -2147483648.0 && t <= 2147483647.0)) { pc_set_fault(PC_FAULT_BAD_CONVERSION); return 0; }
    return (int32_t)t;
}
static inline int8_t pc_to_i8(double x)
{
    double t = trunc(x);
    if (!(t >= -128.0 && t <= 127.0)) { pc_set_fault(PC_FAULT_BAD_CONVERSION); return 0; }
    return (int8_t)t;
}
