//! Collects every error of one macro invocation, so that all of them are reported at once.

use std::cell::RefCell;
use std::fmt::Display;

use proc_macro2::TokenStream;
use quote::ToTokens;

#[derive(Default)]
pub(crate) struct Ctxt {
    errors: RefCell<Option<syn::Error>>,
}

impl Ctxt {
    pub fn error_spanned_by<T: ToTokens, M: Display>(&self, tokens: T, message: M) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    pub fn error_at<M: Display>(&self, span: proc_macro2::Span, message: M) {
        self.push(syn::Error::new(span, message));
    }

    pub fn push(&self, error: syn::Error) {
        let mut slot = self.errors.borrow_mut();
        match slot.as_mut() {
            Some(e) => e.combine(error),
            None => *slot = Some(error),
        }
    }

    pub fn has_errors(&self) -> bool {
        self.errors.borrow().is_some()
    }

    /// The errors as `compile_error!` invocations.
    pub fn into_tokens(self) -> TokenStream {
        self.errors
            .into_inner()
            .map(|e| e.to_compile_error())
            .unwrap_or_default()
    }
}
