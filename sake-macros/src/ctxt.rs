//! Collects every error of one macro invocation, so that all of them are reported at once.
//!
//! Parsing and validation record errors here and carry on; [`Ctxt::check`] at the end says
//! whether the code may be generated.

use std::cell::RefCell;
use std::fmt::Display;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

#[derive(Default)]
pub(crate) struct Ctxt {
    errors: RefCell<Vec<syn::Error>>,
}

impl Ctxt {
    /// An error spanning `tokens`.
    pub fn error_spanned_by<T: ToTokens, M: Display>(&self, tokens: T, message: M) {
        self.push(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// An error at `span`.
    pub fn error_at<M: Display>(&self, span: Span, message: M) {
        self.push(syn::Error::new(span, message));
    }

    pub fn push(&self, error: syn::Error) {
        self.errors.borrow_mut().push(error);
    }

    /// `Ok` if nothing was recorded; otherwise every error as `compile_error!` invocations.
    pub fn check(self) -> Result<(), TokenStream> {
        let errors = self.into_sorted();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.iter().map(syn::Error::to_compile_error).collect())
        }
    }

    /// The errors in the order of the source; errors at the same place (or without a
    /// location) in the order recorded.
    fn into_sorted(self) -> Vec<syn::Error> {
        let mut errors = self.errors.into_inner();
        errors.sort_by_key(|e| {
            let at = e.span().start();
            (at.line, at.column)
        });
        errors
    }

    /// The messages, as [`Ctxt::check`] orders them.
    #[cfg(test)]
    pub fn messages(self) -> Vec<String> {
        self.into_sorted().iter().map(ToString::to_string).collect()
    }
}
