//! Kernel-level scalars and constant subexpressions, folded at compile time by the reference
//! interpreter itself, so that a folded value is bit for bit what the kernel computes.
//!
//! A subexpression is constant when it reads no array but kernel-level scalar temporaries
//! (`let scale: f32;` set by statements without loops) and uses parameters, not loop
//! variables (`1.0 / sqrt(f32(D))`). It is evaluated by interpreting a kernel made of the
//! scalar statements seen so far (in program order, as the original runs them) and one
//! statement storing the subexpression: the interpreter's arithmetic, in the kernel's types,
//! with no second implementation of it. Scalar statements that read input data are refused.

use super::recognise::{aff_value, visit};
use frontend::ir::{
    Access, Array, ArrayId, AssignOp, Expr, ExprKind, Kernel, Node, Role, Stmt, Type,
};
use poly::interp::{Interpreter, Memory, ParamValues};
use std::collections::BTreeMap;

/// Folds constants of one kernel, statement by statement.
pub struct Folder<'k> {
    kernel: &'k Kernel,
    params: &'k BTreeMap<String, i64>,
    /// The kernel-level scalar statements seen so far, in program order.
    scalars: Vec<Stmt>,
}

impl<'k> Folder<'k> {
    /// A folder for `kernel` at the sizes `params`.
    pub fn new(kernel: &'k Kernel, params: &'k BTreeMap<String, i64>) -> Folder<'k> {
        Folder {
            kernel,
            params,
            scalars: Vec::new(),
        }
    }

    /// Whether reads of `array` are folded: a scalar temporary, whose value at every point is
    /// what the scalar statements before it computed (zero before the first).
    pub fn is_folded(&self, array: ArrayId) -> bool {
        let a = self.kernel.array(array);
        a.dims.is_empty() && a.role == Role::Temp
    }

    /// Records a statement without loops, which must set a scalar temporary from parameters,
    /// literals and other such scalars.
    pub fn scalar_statement(&mut self, s: &Stmt) -> Result<(), String> {
        let target = self.kernel.array(s.target.array);
        if !self.is_folded(s.target.array) {
            return Err(format!(
                "sets `{}` outside every loop; the vector path computes only scalar temporaries there",
                target.name
            ));
        }
        if !self.constant(&s.rhs) {
            return Err(format!(
                "computes the kernel-level scalar `{}` from input data; the vector path folds only scalars that depend on parameters",
                target.name
            ));
        }
        self.scalars.push(s.clone());
        // evaluated once now, so that a fault names this statement
        let read = Expr {
            kind: ExprKind::Read(s.target.clone()),
            ty: Type::Elem(target.elem),
        };
        self.evaluate(&read).map(|_| ())
    }

    /// `e` with every maximal constant subexpression (not already a literal, not a truth
    /// value) replaced by its value.
    pub fn fold(&self, e: &Expr) -> Result<Expr, String> {
        if self.constant(e) && matches!(e.ty, Type::Elem(_)) {
            if matches!(e.kind, ExprKind::Literal(_)) {
                return Ok(e.clone());
            }
            return Ok(Expr {
                kind: ExprKind::Literal(self.evaluate(e)?),
                ty: e.ty,
            });
        }
        let f = |x: &Expr| self.fold(x).map(Box::new);
        let kind = match &e.kind {
            ExprKind::Literal(_) | ExprKind::Index(_) | ExprKind::Read(_) => e.kind.clone(),
            ExprKind::Neg(a) => ExprKind::Neg(f(a)?),
            ExprKind::Not(a) => ExprKind::Not(f(a)?),
            ExprKind::Cast(a) => ExprKind::Cast(f(a)?),
            ExprKind::Binary(op, a, b) => ExprKind::Binary(*op, f(a)?, f(b)?),
            ExprKind::Compare(op, a, b) => ExprKind::Compare(*op, f(a)?, f(b)?),
            ExprKind::Logic(op, a, b) => ExprKind::Logic(*op, f(a)?, f(b)?),
            ExprKind::Select(c, a, b) => ExprKind::Select(f(c)?, f(a)?, f(b)?),
            ExprKind::Call(func, args) => ExprKind::Call(
                *func,
                args.iter()
                    .map(|a| self.fold(a))
                    .collect::<Result<_, _>>()?,
            ),
        };
        Ok(Expr { kind, ty: e.ty })
    }

    /// Whether `e` reads nothing but folded scalars and uses no loop variable.
    fn constant(&self, e: &Expr) -> bool {
        let mut constant = true;
        visit(e, &mut |x| match &x.kind {
            ExprKind::Read(a) => constant &= self.is_folded(a.array),
            ExprKind::Index(i) => constant &= aff_value(i, self.params).is_some(),
            _ => {}
        });
        constant
    }

    /// The value of a constant expression: the scalar statements so far and `__fold = e`,
    /// interpreted.
    fn evaluate(&self, e: &Expr) -> Result<f64, String> {
        let Type::Elem(elem) = e.ty else {
            return Err("a truth value cannot be folded".into());
        };
        let mut k = self.kernel.clone();
        // Only scalars are touched: every array shrinks to one element.
        k.arrays.iter_mut().for_each(|a| a.dims.clear());
        let slot = ArrayId(k.arrays.len());
        k.arrays.push(Array {
            name: format!("__fold{}", slot.0),
            elem,
            dims: vec![],
            role: Role::Temp,
            span: Default::default(),
        });
        let fold = Stmt {
            name: "__fold".into(),
            target: Access {
                array: slot,
                indices: vec![],
                span: Default::default(),
            },
            op: AssignOp::Assign,
            rhs: e.clone(),
            span: Default::default(),
        };
        k.body = (self.scalars.iter().cloned())
            .chain([fold])
            .map(Node::Stmt)
            .collect();
        let run = || -> Result<f64, poly::interp::InterpError> {
            let values = ParamValues::resolve(&k, self.params, &BTreeMap::new())?;
            let mut memory = Memory::zeroed(&k, &values)?;
            Interpreter::new(&k, &values)?.run_original(&mut memory)?;
            Ok(memory.arrays()[slot.0].values()[0])
        };
        run().map_err(|err| format!("folding a constant fails: {err}"))
    }
}
