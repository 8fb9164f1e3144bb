//! The few isl functions that isl-rs does not bind (or binds unsafely), declared by hand.
//!
//! isl-rs's `to_str` leaks the printed string and dereferences NULL; its bindings have no
//! callbacks, so enumeration (`foreach_*`) is declared here too; nor the AST builder
//! (`isl_ast_build_*`) and `isl_basic_set_partial_lexmin_pw_multi_aff`; nor
//! `isl_ctx_get_operations`, which the vendored isl adds (`vendor/README.md`). Every
//! hand-written isl declaration of the project is here.

use libc::{c_char, c_int, c_void, uintptr_t};

/// `isl_stat` / `isl_bool` values.
pub const ISL_STAT_OK: c_int = 0;
/// isl's `isl_stat_error`: a `foreach` callback's request to stop.
pub const ISL_STAT_ERROR: c_int = -1;

/// Callback type of `isl_*_foreach_*`.
pub type ForeachFn = unsafe extern "C" fn(obj: uintptr_t, user: *mut c_void) -> c_int;

unsafe extern "C" {
    pub fn isl_set_to_str(obj: uintptr_t) -> *mut c_char;
    pub fn isl_map_to_str(obj: uintptr_t) -> *mut c_char;
    pub fn isl_union_set_to_str(obj: uintptr_t) -> *mut c_char;
    pub fn isl_union_map_to_str(obj: uintptr_t) -> *mut c_char;
    pub fn isl_basic_set_to_str(obj: uintptr_t) -> *mut c_char;
    pub fn isl_schedule_to_str(obj: uintptr_t) -> *mut c_char;
    pub fn isl_val_to_str(obj: uintptr_t) -> *mut c_char;
    pub fn isl_schedule_node_to_str(obj: uintptr_t) -> *mut c_char;
    pub fn isl_union_set_foreach_set(uset: uintptr_t, f: ForeachFn, user: *mut c_void) -> c_int;
    pub fn isl_union_map_foreach_map(umap: uintptr_t, f: ForeachFn, user: *mut c_void) -> c_int;
    pub fn isl_set_foreach_point(set: uintptr_t, f: ForeachFn, user: *mut c_void) -> c_int;
    pub fn isl_point_get_coordinate_val(pnt: uintptr_t, type_: c_int, pos: c_int) -> uintptr_t;
    pub fn isl_point_free(pnt: uintptr_t) -> uintptr_t;
    pub fn isl_val_get_num_si(v: uintptr_t) -> i64;
    pub fn isl_val_free(v: uintptr_t) -> uintptr_t;
    pub fn isl_ast_build_from_context(context: uintptr_t) -> uintptr_t;
    pub fn isl_ast_build_node_from_schedule(build: uintptr_t, schedule: uintptr_t) -> uintptr_t;
    pub fn isl_ast_build_free(build: uintptr_t) -> uintptr_t;
    pub fn isl_ast_build_set_iterators(build: uintptr_t, iterators: uintptr_t) -> uintptr_t;
    pub fn isl_ast_node_to_C_str(node: uintptr_t) -> *mut c_char;
    pub fn isl_ast_node_free(node: uintptr_t) -> uintptr_t;
    pub fn isl_ast_node_get_type(node: uintptr_t) -> c_int;
    pub fn isl_basic_set_partial_lexmin_pw_multi_aff(
        bset: uintptr_t,
        dom: uintptr_t,
        empty: *mut uintptr_t,
    ) -> uintptr_t;
    pub fn isl_ctx_get_operations(ctx: uintptr_t) -> u64;
}
