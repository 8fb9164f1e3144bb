/* polyc harness runtime: .npy input and output, checksums printed exactly as `polyc run`
 * prints them, timing. Needs polyc_runtime.h first. */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

enum pc_elem { PC_F64, PC_F32, PC_F16, PC_BF16, PC_I32, PC_I8 };
static const char *const pc_elem_name[] = {"f64", "f32", "f16", "bf16", "i32", "i8"};
static const int pc_elem_size[] = {8, 4, 2, 2, 4, 1};
/* The dtype written (and read) per type: bf16 travels as f4, as NumPy has no bf16. */
static const char pc_elem_kind[] = {'f', 'f', 'f', 'f', 'i', 'i'};
static const int pc_npy_size[] = {8, 4, 2, 4, 4, 1};

static void pc_die(const char *what, const char *detail)
{
    fprintf(stderr, "error: %s%s\n", what, detail);
    exit(1);
}

static double pc_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Element i of an array as a value and as its bits in its own type (NaNs canonical). */
static double pc_elem_get(int e, const void *data, long i, uint64_t *bits)
{
    double v;
    switch (e) {
    case PC_F64: { double x = ((const double *)data)[i]; uint64_t b; memcpy(&b, &x, 8); *bits = isnan(x) ? 0x7ff8000000000000ull : b; return x; }
    case PC_F32: { float x = ((const float *)data)[i]; uint32_t b; memcpy(&b, &x, 4); *bits = isnan(x) ? 0x7fc00000u : b; return x; }
    case PC_F16: { uint16_t b; memcpy(&b, (const char *)data + 2 * i, 2); v = pc_f16_load(((const pc_f16_t *)data)[i]); *bits = isnan(v) ? 0x7e00 : b; return v; }
    case PC_BF16: { uint16_t b = ((const uint16_t *)data)[i]; v = pc_bf16_load(b); *bits = isnan(v) ? 0x7fc0 : b; return v; }
    case PC_I32: { int32_t x = ((const int32_t *)data)[i]; *bits = (uint32_t)x; return x; }
    default: { int8_t x = ((const int8_t *)data)[i]; *bits = (uint8_t)x; return x; }
    }
}

/* `v` as Rust's `{:e}` prints it: the shortest digits that read back as `v`. */
static void pc_format_e(double v, char *out, size_t size)
{
    if (isnan(v)) { snprintf(out, size, "NaN"); return; }
    if (isinf(v)) { snprintf(out, size, v < 0 ? "-inf" : "inf"); return; }
    if (v == 0) { snprintf(out, size, signbit(v) ? "-0e0" : "0e0"); return; }
    char buf[64];
    for (int prec = 0; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    char *e = strchr(buf, 'e');
    *e = '\0';
    snprintf(out, size, "%se%d", buf, atoi(e + 1));
}

static void pc_print_checksum(const char *name, int e, int rank, const long *shape, const void *data)
{
    long n = 1;
    for (int d = 0; d < rank; d++) n *= shape[d];
    uint64_t hash = 0xcbf29ce484222325ull;
    double sum = -0.0;
    for (long i = 0; i < n; i++) {
        uint64_t bits;
        sum += pc_elem_get(e, data, i, &bits);
        for (int k = 0; k < pc_elem_size[e]; k++) {
            hash = (hash ^ ((bits >> (8 * k)) & 0xff)) * 0x00000100000001b3ull;
        }
    }
    char s[64];
    pc_format_e(sum, s, sizeof s);
    printf("%s %s[", name, pc_elem_name[e]);
    for (int d = 0; d < rank; d++) printf(d ? ", %ld" : "%ld", shape[d]);
    printf("] sum=%s hash=%016llx\n", s, (unsigned long long)hash);
}

static int pc_little_endian(void) { uint16_t x = 1; unsigned char c; memcpy(&c, &x, 1); return c == 1; }

/* Reads DIR/NAME.npy into `data` (checked against the type and shape); returns 0 when the
 * file does not exist. */
static int pc_read_npy(const char *dir, const char *name, int e, int rank, const long *shape, void *data)
{
    char path[4096], detail[4400];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) return 0;
        pc_die("cannot open ", path);
    }
    unsigned char pre[12];
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) pc_die("not a .npy file: ", path);
    unsigned long hlen = pre[8] | (pre[9] << 8);
    if (pre[6] >= 2) {
        if (fread(pre + 10, 1, 2, f) != 2) pc_die("truncated .npy header: ", path);
        hlen |= ((unsigned long)pre[10] << 16) | ((unsigned long)pre[11] << 24);
    }
    char *h = calloc(hlen + 1, 1);
    if (!h || fread(h, 1, hlen, f) != hlen) pc_die("truncated .npy header: ", path);
    char *descr = strstr(h, "'descr'"), *fo = strstr(h, "'fortran_order'"), *sh = strstr(h, "'shape'");
    if (!descr || !fo || !sh) pc_die("malformed .npy header: ", path);
    descr = strchr(descr + 7, '\'');
    if (!descr) pc_die("malformed .npy header: ", path);
    char order = descr[1], kind = descr[2];
    int size = atoi(descr + 3);
    char *fv = strchr(fo, ':');
    while (fv && (*fv == ':' || *fv == ' ')) fv++;
    if (fv && strncmp(fv, "True", 4) == 0)
        pc_die("Fortran-order arrays are not supported; save in C order: ", path);
    if (kind != pc_elem_kind[e] || size != pc_npy_size[e]) {
        snprintf(detail, sizeof detail, "`%s` (%s) has dtype %.8s, expected %c%d", name, path, descr + 1, pc_elem_kind[e], pc_npy_size[e]);
        pc_die("", detail);
    }
    int swap = size > 1 && ((order == '>' && pc_little_endian()) || (order == '<' && !pc_little_endian()));
    char *p = strchr(sh, '(');
    long n = 1;
    int d = 0;
    for (p = p ? p + 1 : p; p && *p && *p != ')'; d++) {
        while (*p == ' ') p++;
        if (*p == ')') break;
        long ext = strtol(p, &p, 10);
        if (d >= rank || ext != shape[d]) {
            snprintf(detail, sizeof detail, "`%s` (%s) does not have the kernel's shape", name, path);
            pc_die("", detail);
        }
        n *= ext;
        while (*p == ',' || *p == ' ') p++;
    }
    if (d != rank) {
        snprintf(detail, sizeof detail, "`%s` (%s) has rank %d, expected %d", name, path, d, rank);
        pc_die("", detail);
    }
    free(h);
    unsigned char *raw = malloc((size_t)(n > 0 ? n : 1) * (size_t)size);
    if (!raw || fread(raw, (size_t)size, (size_t)n, f) != (size_t)n) pc_die("truncated .npy data: ", path);
    fclose(f);
    for (long i = 0; swap && i < n; i++)
        for (int a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char t = raw[i * size + a]; raw[i * size + a] = raw[i * size + b]; raw[i * size + b] = t;
        }
    if (e == PC_BF16) {
        for (long i = 0; i < n; i++) {
            float x; memcpy(&x, raw + 4 * i, 4);
            ((pc_bf16_t *)data)[i] = pc_bf16_store(pc_rbf16(x));
        }
    } else {
        memcpy(data, raw, (size_t)n * (size_t)size);
    }
    free(raw);
    return 1;
}

static void pc_write_npy(const char *dir, const char *name, int e, int rank, const long *shape, const void *data)
{
    char path[4096], header[512], dims[256] = "";
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    mkdir(dir, 0777);
    long n = 1;
    for (int d = 0; d < rank; d++) {
        size_t used = strlen(dims);
        snprintf(dims + used, sizeof dims - used, rank == 1 ? "%ld," : (d ? ", %ld" : "%ld"), shape[d]);
        n *= shape[d];
    }
    char descr[8];
    snprintf(descr, sizeof descr, "%c%c%d", pc_npy_size[e] == 1 ? '|' : '<', pc_elem_kind[e], pc_npy_size[e]);
    int len = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, dims);
    int total = ((10 + len + 1 + 63) / 64) * 64;
    while (10 + len + 1 < total) header[len++] = ' ';
    header[len++] = '\n';
    FILE *f = fopen(path, "wb");
    if (!f) pc_die("cannot create ", path);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(len & 0xff), (unsigned char)(len >> 8)};
    fwrite(pre, 1, 10, f);
    fwrite(header, 1, (size_t)len, f);
    for (long i = 0; i < n; i++) {
        if (e == PC_BF16) {
            float x = pc_bf16_load(((const pc_bf16_t *)data)[i]);
            fwrite(&x, 4, 1, f);
        } else {
            fwrite((const char *)data + i * pc_elem_size[e], (size_t)pc_elem_size[e], 1, f);
        }
    }
    if (fclose(f) != 0) pc_die("cannot write ", path);
}

/* Deterministic values for inputs given no file (not the interpreter's: pass files to get
 * those): floats in [-1, 1), integers in -8..8. */
static void pc_fill_default(int e, long n, void *data, uint64_t seed)
{
    for (long i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(seed >> 11) * 0x1p-53 * 2.0 - 1.0;
        int k = (int)(seed >> 60) - 8;
        switch (e) {
        case PC_F64: ((double *)data)[i] = u; break;
        case PC_F32: ((float *)data)[i] = (float)u; break;
        case PC_F16: ((pc_f16_t *)data)[i] = pc_f16_store(pc_rf16(u)); break;
        case PC_BF16: ((pc_bf16_t *)data)[i] = pc_bf16_store(pc_rbf16(u)); break;
        case PC_I32: ((int32_t *)data)[i] = k; break;
        default: ((int8_t *)data)[i] = (int8_t)k; break;
        }
    }
}

static const char *pc_fault_message(int code)
{
    switch (code) {
    case PC_FAULT_DIVISION_BY_ZERO: return "integer division by zero";
    case PC_FAULT_BAD_CONVERSION: return "a value converted to an integer type does not fit it (or is NaN or infinite)";
    case PC_FAULT_OUT_OF_BOUNDS: return "an array index is out of bounds";
    case PC_FAULT_OUT_OF_MEMORY: return "out of memory";
    default: return "unknown fault";
    }
}
