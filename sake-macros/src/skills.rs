//! `sake::skills!("dir")`: a directory of Agent Skills, read and checked at compile time. The
//! path is relative to the invoking file, as for `include_bytes!`.
//!
//! Every file under the directory (names starting with `.` skipped) is embedded with
//! `include_bytes!` (so that a change to one rebuilds the crate) and its SHA-256 computed here;
//! every directory with a `SKILL.md` is a skill, its frontmatter parsed and checked by the
//! rules of `sake_rules::skill`. Every error is reported, not only the first, each naming the
//! file and what to change, at the literal.

use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use quote::quote;
use sha2::{Digest, Sha256};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{LitStr, Token};

use sake_rules::skill as rules;

/// The macro's input: `"dir"` and optionally `, scopes("a", "b")`.
pub(crate) struct Input {
    dir: LitStr,
    scopes: Vec<LitStr>,
}

impl Parse for Input {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let form = "write `sake::skills!(\"skills\")` or `sake::skills!(\"skills\", scopes(\"docs:read\"))`";
        let dir: LitStr = input.parse().map_err(|e| {
            syn::Error::new(e.span(), format!("expected the skills directory: {form}"))
        })?;
        let mut scopes = Vec::new();
        if input.parse::<Option<Token![,]>>()?.is_some() && !input.is_empty() {
            let key: syn::Ident = input.parse()?;
            if key != "scopes" {
                return Err(syn::Error::new(
                    key.span(),
                    format!("unknown option `{key}`: the only option is `scopes(...)`; {form}"),
                ));
            }
            let content;
            syn::parenthesized!(content in input);
            let list = Punctuated::<LitStr, Token![,]>::parse_terminated(&content)?;
            // Every bad scope at once.
            let mut bad: Option<syn::Error> = None;
            for s in list {
                if let Err(e) = sake_rules::scope::check(&s.value()) {
                    let e = syn::Error::new(s.span(), format!("scope {:?}: {e}", s.value()));
                    match &mut bad {
                        Some(all) => all.combine(e),
                        None => bad = Some(e),
                    }
                }
                scopes.push(s);
            }
            if let Some(e) = bad {
                return Err(e);
            }
            if scopes.is_empty() {
                return Err(syn::Error::new(
                    key.span(),
                    "name at least one scope, or drop `scopes()`",
                ));
            }
            let _ = input.parse::<Option<Token![,]>>()?;
        }
        if !input.is_empty() {
            return Err(input.error(format!("unexpected input; {form}")));
        }
        Ok(Input { dir, scopes })
    }
}

/// A file found under the directory.
struct Found {
    /// Relative to the directory, `/`-separated.
    rel: String,
    abs: PathBuf,
    bytes: Vec<u8>,
}

/// Every file under `dir`; what cannot be read or is badly named goes to `errors` (and is left
/// out), so that every error is reported at once.
fn walk(root: &Path, dir: &Path, out: &mut Vec<Found>, errors: &mut Vec<String>) {
    let mut entries: Vec<_> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.filter_map(Result::ok).collect(),
        Err(e) => {
            errors.push(format!("cannot read {}: {e}", dir.display()));
            return;
        }
    };
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let rel = path
            .strip_prefix(root)
            .map(|p| {
                p.components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_else(|_| name.clone());
        if let Err(reason) = rules::check_segment(&name) {
            errors.push(format!("{rel}: {reason}"));
            continue;
        }
        // A symbolic link is followed only to a file inside the directory: never out of it
        // (the build would embed whatever it points at), never to a directory (a loop).
        if entry.file_type().is_ok_and(|t| t.is_symlink()) {
            match std::fs::canonicalize(&path) {
                Err(e) => {
                    errors.push(format!(
                        "{rel}: a symbolic link that cannot be followed: {e}"
                    ));
                    continue;
                }
                Ok(target) if !target.starts_with(root) || target.is_dir() => {
                    errors.push(format!(
                        "{rel}: a symbolic link to {}, which is not a file inside the skills directory; copy the file in instead",
                        target.display()
                    ));
                    continue;
                }
                Ok(_) => {}
            }
        }
        if path.is_dir() {
            walk(root, &path, out, errors);
        } else {
            match std::fs::read(&path) {
                Ok(bytes) => out.push(Found {
                    rel,
                    abs: path,
                    bytes,
                }),
                Err(e) => errors.push(format!("cannot read {}: {e}", path.display())),
            }
        }
    }
}

fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut out = String::from("sha256:");
    for b in hash {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Reads and checks the directory; each error is a sentence naming the file, and every error
/// found is reported, not only the first.
fn read(input: &Input, base: &Path) -> Result<TokenStream, Vec<String>> {
    let sake = crate::krate::path();
    let written = input.dir.value();
    let joined = base.join(&written);
    // `include_bytes!` takes the absolute path: rustc's working directory is not the file's.
    let root = std::fs::canonicalize(&joined).map_err(|_| {
        vec![format!(
            "{written:?} is not a directory next to this file (the path is relative to the file that invokes sake::skills!, as for include_bytes!)"
        )]
    })?;
    if !root.is_dir() {
        return Err(vec![format!(
            "{written:?} is not a directory (the path is relative to the file that invokes sake::skills!)"
        )]);
    }
    let mut errors = Vec::new();
    let mut files = Vec::new();
    walk(&root, &root, &mut files, &mut errors);
    // The skills: every directory holding a SKILL.md (`dirs`), and those whose frontmatter
    // holds (`skills`).
    let mut dirs: Vec<&str> = Vec::new();
    let mut skills: Vec<(String, String)> = Vec::new();
    for f in &files {
        let Some(dir) = f.rel.strip_suffix("/SKILL.md") else {
            if f.rel == rules::SKILL_MD {
                errors.push(format!(
                    "{written}/SKILL.md: a skill is a directory under {written:?} named as the skill (put it in {written}/<name>/SKILL.md)"
                ));
            }
            continue;
        };
        dirs.push(dir);
        let file = format!("{written}/{}", f.rel);
        let Ok(text) = std::str::from_utf8(&f.bytes) else {
            errors.push(format!("{file}: SKILL.md must be UTF-8 text"));
            continue;
        };
        let fm = match rules::parse(text) {
            Ok(fm) => fm,
            Err(e) => {
                errors.push(format!("{file}: {e}"));
                continue;
            }
        };
        let name = dir.rsplit('/').next().unwrap_or(dir);
        if fm.name != name {
            errors.push(format!(
                "{file}: `name` is {:?} but the skill's directory is {name:?}; they must be equal (rename one)",
                fm.name
            ));
            continue;
        }
        skills.push((dir.to_owned(), fm.json));
    }
    if dirs.is_empty() && !files.iter().any(|f| f.rel == rules::SKILL_MD) {
        errors.push(format!(
            "no skill under {written:?}: a skill is a directory with a SKILL.md ({written}/<name>/SKILL.md)"
        ));
    }
    // Every file belongs to a skill (with or without a frontmatter error of its own); each
    // skill within the limits.
    for f in &files {
        if f.rel != rules::SKILL_MD && !dirs.iter().any(|dir| f.rel.starts_with(&format!("{dir}/")))
        {
            errors.push(format!(
                "{written}/{}: the file is in no skill (no SKILL.md in a directory above it); move it into a skill or out of {written:?}",
                f.rel
            ));
        }
    }
    for dir in &dirs {
        let prefix = format!("{dir}/");
        let (count, total) = files
            .iter()
            .filter(|f| f.rel.starts_with(&prefix))
            .fold((0usize, 0u64), |(n, t), f| {
                (n + 1, t + f.bytes.len() as u64)
            });
        if count > rules::MAX_FILES {
            errors.push(format!(
                "{written}/{dir}: the skill has {count} files; at most {} (nested skills' files count too)",
                rules::MAX_FILES
            ));
        }
        if total > rules::MAX_TOTAL_BYTES {
            errors.push(format!(
                "{written}/{dir}: the skill's files hold {total} bytes; at most {} (16 MiB)",
                rules::MAX_TOTAL_BYTES
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let file_items = files.iter().map(|f| {
        let rel = &f.rel;
        let abs = f.abs.to_string_lossy().into_owned();
        let d = digest(&f.bytes);
        quote!(#sake::skills::EmbeddedFile {
            path: #rel,
            bytes: ::core::include_bytes!(#abs),
            digest: #d,
        })
    });
    let skill_items = skills
        .iter()
        .map(|(path, fm)| quote!(#sake::skills::EmbeddedSkill { path: #path, frontmatter: #fm }));
    let scopes = &input.scopes;
    Ok(quote! {
        const _: () = {
            static __SAKE_SKILL_FILES: &[#sake::skills::EmbeddedFile] = &[#(#file_items),*];
            static __SAKE_SKILLS: &[#sake::skills::EmbeddedSkill] = &[#(#skill_items),*];
            #sake::__private::inventory::submit! {
                #sake::skills::EmbeddedSkills {
                    dir: #written,
                    files: __SAKE_SKILL_FILES,
                    skills: __SAKE_SKILLS,
                    scopes: &[#(#scopes),*],
                    location: #sake::__private::Location {
                        file: ::core::file!(),
                        line: ::core::line!(),
                        module: ::core::module_path!(),
                    },
                }
            }
        };
    })
}

pub(crate) fn expand(input: Input, base: &Path) -> TokenStream {
    match read(&input, base) {
        Ok(tokens) => tokens,
        Err(messages) => {
            let span = input.dir.span();
            let mut all = messages.into_iter().map(|m| syn::Error::new(span, m));
            let Some(mut first) = all.next() else {
                return TokenStream::new();
            };
            first.extend(all);
            first.to_compile_error()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_out_of_the_directory_is_refused() {
        let base = std::env::temp_dir().join(format!("sake-skills-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("skills");
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::write(root.join("a/SKILL.md"), "x").unwrap();
        std::fs::write(base.join("secret"), "s").unwrap();
        let root = std::fs::canonicalize(&root).unwrap();
        // A link to a file inside is fine.
        std::os::unix::fs::symlink(root.join("a/SKILL.md"), root.join("a/copy.md")).unwrap();
        let (mut out, mut errors) = (Vec::new(), Vec::new());
        walk(&root, &root, &mut out, &mut errors);
        assert_eq!((out.len(), errors.len()), (2, 0));
        // Out of the directory, or to a directory: refused, naming the link.
        std::os::unix::fs::symlink(base.join("secret"), root.join("a/leak.txt")).unwrap();
        let mut errors = Vec::new();
        walk(&root, &root, &mut Vec::new(), &mut errors);
        let [err] = errors.as_slice() else {
            panic!("{errors:?}")
        };
        let secret = std::fs::canonicalize(base.join("secret")).unwrap();
        assert_eq!(
            *err,
            format!(
                "a/leak.txt: a symbolic link to {}, which is not a file inside the skills directory; copy the file in instead",
                secret.display()
            )
        );
        std::fs::remove_file(root.join("a/leak.txt")).unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("a/loop")).unwrap();
        let mut errors = Vec::new();
        walk(&root, &root, &mut Vec::new(), &mut errors);
        assert!(
            errors.len() == 1 && errors[0].starts_with("a/loop: a symbolic link to "),
            "{errors:?}"
        );
        let _ = std::fs::remove_dir_all(&base);
    }
}
