//! Application state: values registered on the builder (`.state(pool)`) that functions
//! receive through a `State<T>` parameter.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::ops::Deref;
use std::sync::Arc;

/// A value registered with [`Server::state`](crate::Server::state), shared by every request.
///
/// ```standalone_crate
/// use sake::prelude::*;
/// use sake::State;
///
/// struct Greeting(String);
///
/// /// Greets with the configured greeting.
/// #[tool]
/// fn greet(name: String, greeting: State<Greeting>) -> String {
///     format!("{}, {name}!", greeting.0)
/// }
///
/// let server = Server::from_registry().state(Greeting("Hello".into()));
/// # let _ = server;
/// ```
///
/// A parameter whose type is named `State<..>` receives state, so it must be this type:
/// another `State` (axum's extractor, say) is refused at compile time with an error that
/// says so. Mark such a parameter `#[arg]` to make it an argument instead.
///
/// ```compile_fail,E0277
/// use sake::prelude::*;
///
/// struct Db;
///
/// /// Uses axum's extractor by mistake.
/// #[tool]
/// fn query(db: axum::extract::State<Db>) -> String {
///     String::new()
/// }
/// ```
pub struct State<T: ?Sized>(Arc<T>);

impl<T: ?Sized> State<T> {
    /// Wraps a shared value (for calling a function directly, in tests).
    pub fn new(value: Arc<T>) -> Self {
        State(value)
    }

    /// The shared value.
    pub fn into_inner(self) -> Arc<T> {
        self.0
    }
}

impl<T: ?Sized> Clone for State<T> {
    fn clone(&self) -> Self {
        State(self.0.clone())
    }
}

impl<T: ?Sized> Deref for State<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: ?Sized + std::fmt::Debug> std::fmt::Debug for State<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("State").field(&&*self.0).finish()
    }
}

/// A state type a function needs.
#[derive(Clone, Copy, Debug)]
pub struct StateNeed {
    /// Its `TypeId`.
    pub type_id: TypeId,
    /// Its name, for messages.
    pub type_name: &'static str,
}

impl StateNeed {
    /// The need for `T`.
    pub fn of<T: 'static>() -> Self {
        StateNeed {
            type_id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
        }
    }
}

/// The registered values, by type.
#[derive(Clone, Default)]
pub(crate) struct StateMap {
    values: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for StateMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StateMap({} values)", self.values.len())
    }
}

impl StateMap {
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        self.values.insert(TypeId::of::<T>(), Arc::new(value));
    }

    pub fn get<T: Send + Sync + 'static>(&self) -> Option<State<T>> {
        self.values
            .get(&TypeId::of::<T>())
            .and_then(|v| v.clone().downcast::<T>().ok())
            .map(State)
    }

    pub fn contains(&self, id: TypeId) -> bool {
        self.values.contains_key(&id)
    }
}
