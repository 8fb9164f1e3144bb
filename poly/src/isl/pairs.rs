//! Pairs of instances compared by an affine function of the instances, statement pair by
//! statement pair.
//!
//! Building the order between every two instances of a program (`lex_lt_union_map` of a
//! schedule with itself) grows with the square of the statements; restricting a relation
//! of pairs by how a function compares its two ends
//! (`isl_union_map_*_at_multi_union_pw_aff`) only looks at the statement pairs the relation
//! holds.

use super::{IslResult, Obj, UnionMap, UnionSet};
use isl_rs::MultiUnionPwAff;
use libc::uintptr_t;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// How the two ends of a pair compare under a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PairOrder {
    /// Equal values.
    Equal,
    /// The source's value lexicographically before the sink's.
    Before,
    /// The source's value lexicographically after the sink's.
    After,
}

impl UnionMap {
    /// The pairs of `self` whose ends compare as `order` under `function` (a union map from
    /// instances to values, single-valued, with the same value space for every statement).
    /// Pairs with an end outside `function`'s domain are dropped.
    ///
    /// Answers are kept by the context (`Memo`): asked again about the same relations,
    /// it gives the same answer without computing it.
    pub fn pairs_where(&self, function: &UnionMap, order: PairOrder) -> IslResult<UnionMap> {
        let ctx = self.ctx();
        let memo = &ctx.inner.pairs;
        let key = (memo.text(self), memo.text(function), order);
        if let Some(known) = memo.answers.borrow().get(&key) {
            return Ok(Obj::from_raw(ctx, ctx.check(known.copy())?));
        }
        let answer = self.pairs_compared(function, order)?;
        (memo.answers.borrow_mut()).insert(key, answer.to_raw());
        Ok(answer)
    }

    /// [`UnionMap::pairs_where`], computed.
    fn pairs_compared(&self, function: &UnionMap, order: PairOrder) -> IslResult<UnionMap> {
        if function.is_empty()? {
            // isl cannot make a function of an empty map (no range space): no pair compares.
            return self.intersect_domain(&function.domain()?);
        }
        if function
            .range()?
            .sets()?
            .iter()
            .all(|s| s.n_dims().is_ok_and(|n| n == 0))
        {
            // Every end has the empty value: all pairs are equal (isl's `lex_ge_at` of a
            // zero-dimensional function answers no pair at all).
            let domain = function.domain()?;
            let equal = self.intersect_domain(&domain)?.intersect_range(&domain)?;
            return match order {
                PairOrder::Equal => Ok(equal),
                PairOrder::Before | PairOrder::After => equal.subtract(&equal),
            };
        }
        let function = self
            .ctx()
            .check(MultiUnionPwAff::from_union_map(function.to_raw()))?;
        self.apply(|pairs| match order {
            PairOrder::Equal => pairs.eq_at_multi_union_pw_aff(function),
            PairOrder::Before => pairs.lex_lt_at_multi_union_pw_aff(function),
            PairOrder::After => pairs.lex_gt_at_multi_union_pw_aff(function),
        })
    }
}

/// The answers of [`UnionMap::pairs_where`] in one context, by the isl texts of the pairs
/// and of the function (the same text is the same relation) and the order. The
/// transformations' checks and analyses ask the same questions about the same dependences
/// again and again, as they walk each candidate tree: 960 questions, 184 different ones,
/// for PolyBench's adi.
///
/// Printing the relations for the key cost as much as computing the answers (a tenth of
/// `polyc fuzz-schedules`' time): the text of each relation is kept too, by the address of
/// its isl object, which the same relation asked again mostly shares (a copy of an isl
/// object is the object itself, reference-counted). The kept copy holds the object alive,
/// so no other object can take its address; its text may differ from a later printing of
/// the same object (isl simplifies in place), but always denotes the same relation.
#[derive(Default)]
pub(crate) struct Memo {
    answers: RefCell<HashMap<Question, isl_rs::UnionMap>>,
    texts: RefCell<HashMap<uintptr_t, (isl_rs::UnionMap, Rc<str>)>>,
}

/// A question to [`UnionMap::pairs_where`]: the texts of the pairs and of the function, and
/// the order.
type Question = (Rc<str>, Rc<str>, PairOrder);

impl Memo {
    /// The isl text of `relation`, printed the first time its object is seen.
    fn text(&self, relation: &UnionMap) -> Rc<str> {
        if let Some((_, text)) = self.texts.borrow().get(&relation.ptr()) {
            return text.clone();
        }
        let text: Rc<str> = relation.to_string().into();
        (self.texts.borrow_mut()).insert(relation.ptr(), (relation.to_raw(), text.clone()));
        text
    }
}

impl UnionMap {
    /// `self`, a function on instances, without the constraints that `domain` implies, for
    /// each statement on which it is one affine piece (a statement's function of several
    /// pieces is kept whole: simplifying each piece on its own could make them overlap).
    ///
    /// The result is defined beyond `domain`; given to [`UnionMap::pairs_where`] on pairs
    /// within `domain`, it selects the same pairs as `self`, without repeating the domains'
    /// constraints in every comparison (which made isl several times slower).
    pub fn gist_function(&self, domain: &UnionSet) -> IslResult<UnionMap> {
        let mut out = self.subtract(self)?;
        for map in self.maps()? {
            let whole = map.to_union()?;
            let single = map.query(|m| m.n_basic_map())? == 1;
            out = out.union(&if single {
                whole.gist_domain(domain)?
            } else {
                whole
            })?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isl::Ctx;

    #[test]
    fn pairs_are_kept_by_how_their_ends_compare() {
        let ctx = Ctx::default();
        let pairs = ctx
            .union_map("{ S[i] -> T[j] : 0 <= i < 3 and 0 <= j < 3 }")
            .unwrap();
        let f = ctx.union_map("{ S[i] -> [i]; T[j] -> [2 - j] }").unwrap();
        let count = |order| {
            let kept = pairs.pairs_where(&f, order).unwrap();
            let wrapped = kept.wrap().unwrap().sets().unwrap();
            wrapped
                .iter()
                .map(|s| s.points().unwrap().len())
                .sum::<usize>()
        };
        // Values 0..3 on both sides: 3 equal, 3 before, 3 after.
        assert_eq!(count(PairOrder::Equal), 3);
        assert_eq!(count(PairOrder::Before), 3);
        assert_eq!(count(PairOrder::After), 3);
    }

    #[test]
    fn a_zero_dimensional_function_makes_every_pair_in_its_domain_equal() {
        let ctx = Ctx::default();
        let pairs = ctx
            .union_map("{ S[i] -> T[j] : 0 <= i < 3 and 0 <= j < 3 }")
            .unwrap();
        let f = ctx
            .union_map("{ S[i] -> [] : 0 <= i < 2; T[j] -> [] }")
            .unwrap();
        let within = ctx
            .union_map("{ S[i] -> T[j] : 0 <= i < 2 and 0 <= j < 3 }")
            .unwrap();
        for (order, expected) in [
            (PairOrder::Equal, &within),
            (PairOrder::Before, &within.subtract(&within).unwrap()),
            (PairOrder::After, &within.subtract(&within).unwrap()),
        ] {
            let kept = pairs.pairs_where(&f, order).unwrap();
            assert!(kept.is_equal(expected).unwrap(), "{order:?}: {kept}");
        }
    }

    #[test]
    fn a_function_simplified_on_its_domain_selects_the_same_pairs() {
        let ctx = Ctx::default();
        let domain = ctx
            .union_set("[n] -> { S[i] : 0 <= i < n; T[j] : 0 <= j < 3 }")
            .unwrap();
        // S's function is one piece; T's two pieces would overlap if each were simplified.
        let f = ctx
            .union_map("[n] -> { S[i] -> [i] : 0 <= i < n; T[j] -> [0] : j = 0; T[j] -> [1] : 1 <= j < 3 }")
            .unwrap();
        let simple = f.gist_function(&domain).unwrap();
        let whole_s = ctx.union_map("{ S[i] -> [i] }").unwrap();
        // S's piece loses its domain's constraints; T's pieces stay as they were.
        assert!(whole_s.is_subset(&simple).unwrap(), "{simple}");
        assert!(
            simple.is_subset(&whole_s.union(&f).unwrap()).unwrap(),
            "{simple}"
        );
        assert!(simple.is_single_valued().unwrap(), "{simple}");
        let pairs = ctx
            .union_map("[n] -> { S[i] -> T[j] : 0 <= i < n and 0 <= j < 3 }")
            .unwrap();
        for order in [PairOrder::Equal, PairOrder::Before, PairOrder::After] {
            let expected = pairs.pairs_where(&f, order).unwrap();
            let kept = pairs.pairs_where(&simple, order).unwrap();
            assert!(kept.is_equal(&expected).unwrap(), "{order:?}: {kept}");
        }
    }

    #[test]
    fn an_answer_asked_again_is_the_one_kept() {
        let ctx = Ctx::default();
        let pairs = ctx
            .union_map("{ S[i] -> T[j] : 0 <= i < 3 and 0 <= j < 3 }")
            .unwrap();
        let f = ctx.union_map("{ S[i] -> [i]; T[j] -> [j] }").unwrap();
        let first = pairs.pairs_where(&f, PairOrder::Before).unwrap();
        // The same relations parsed anew: the kept object, not a new computation.
        let again = ctx.union_map(&pairs.to_string()).unwrap();
        let second = again.pairs_where(&f, PairOrder::Before).unwrap();
        assert!(second.is_same_object(&first));
        // Another order is another question.
        let after = pairs.pairs_where(&f, PairOrder::After).unwrap();
        assert!(!after.is_equal(&first).unwrap());
    }
}
