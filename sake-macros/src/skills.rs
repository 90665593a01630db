//! `sake::skills!("dir")`: a directory of Agent Skills, read and checked at compile time. The
//! path is relative to the invoking file, as for `include_bytes!`.
//!
//! Every file under the directory (names starting with `.` skipped) is embedded with
//! `include_bytes!` (so that a change to one rebuilds the crate) and its SHA-256 computed here;
//! every directory with a `SKILL.md` is a skill, its frontmatter parsed and checked by the
//! rules of `sake_rules::skill`. Any error names the file and what to change, at the literal.

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
            for s in list {
                if let Err(e) = sake_rules::scope::check(&s.value()) {
                    return Err(syn::Error::new(
                        s.span(),
                        format!("scope {:?}: {e}", s.value()),
                    ));
                }
                scopes.push(s);
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

fn walk(root: &Path, dir: &Path, out: &mut Vec<Found>) -> Result<(), String> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .collect();
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
        rules::check_segment(&name).map_err(|reason| format!("{rel}: {reason}"))?;
        // A symbolic link is followed only to a file inside the directory: never out of it
        // (the build would embed whatever it points at), never to a directory (a loop).
        if entry.file_type().is_ok_and(|t| t.is_symlink()) {
            let target = std::fs::canonicalize(&path)
                .map_err(|e| format!("{rel}: a symbolic link that cannot be followed: {e}"))?;
            if !target.starts_with(root) || target.is_dir() {
                return Err(format!(
                    "{rel}: a symbolic link to {}, which is not a file inside the skills directory; copy the file in instead",
                    target.display()
                ));
            }
        }
        if path.is_dir() {
            walk(root, &path, out)?;
        } else {
            let bytes =
                std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            out.push(Found {
                rel,
                abs: path,
                bytes,
            });
        }
    }
    Ok(())
}

fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut out = String::from("sha256:");
    for b in hash {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Reads and checks the directory; the error is a sentence naming the file.
fn read(input: &Input, base: &Path) -> Result<TokenStream, String> {
    let written = input.dir.value();
    let joined = base.join(&written);
    // `include_bytes!` takes the absolute path: rustc's working directory is not the file's.
    let root = std::fs::canonicalize(&joined).map_err(|_| {
        format!(
            "{written:?} is not a directory next to this file (the path is relative to the file that invokes sake::skills!, as for include_bytes!)"
        )
    })?;
    if !root.is_dir() {
        return Err(format!(
            "{written:?} is not a directory (the path is relative to the file that invokes sake::skills!)"
        ));
    }
    let mut files = Vec::new();
    walk(&root, &root, &mut files)?;
    // The skills: every directory holding a SKILL.md.
    let mut skills: Vec<(String, String)> = Vec::new();
    for f in &files {
        let Some(dir) = f.rel.strip_suffix("/SKILL.md") else {
            if f.rel == rules::SKILL_MD {
                return Err(format!(
                    "{written}/SKILL.md: a skill is a directory under {written:?} named as the skill (put it in {written}/<name>/SKILL.md)"
                ));
            }
            continue;
        };
        let file = format!("{written}/{}", f.rel);
        let text = std::str::from_utf8(&f.bytes)
            .map_err(|_| format!("{file}: SKILL.md must be UTF-8 text"))?;
        let fm = rules::parse(text).map_err(|e| format!("{file}: {e}"))?;
        let name = dir.rsplit('/').next().unwrap_or(dir);
        if fm.name != name {
            return Err(format!(
                "{file}: `name` is {:?} but the skill's directory is {name:?}; they must be equal (rename one)",
                fm.name
            ));
        }
        skills.push((dir.to_owned(), fm.json));
    }
    if skills.is_empty() {
        return Err(format!(
            "no skill under {written:?}: a skill is a directory with a SKILL.md ({written}/<name>/SKILL.md)"
        ));
    }
    // Every file belongs to a skill; each skill within the limits.
    for f in &files {
        if !skills
            .iter()
            .any(|(dir, _)| f.rel.starts_with(&format!("{dir}/")))
        {
            return Err(format!(
                "{written}/{}: the file is in no skill (no SKILL.md in a directory above it); move it into a skill or out of {written:?}",
                f.rel
            ));
        }
    }
    for (dir, _) in &skills {
        let prefix = format!("{dir}/");
        let (count, total) = files
            .iter()
            .filter(|f| f.rel.starts_with(&prefix))
            .fold((0usize, 0u64), |(n, t), f| {
                (n + 1, t + f.bytes.len() as u64)
            });
        if count > rules::MAX_FILES {
            return Err(format!(
                "{written}/{dir}: the skill has {count} files; at most {} (nested skills' files count too)",
                rules::MAX_FILES
            ));
        }
        if total > rules::MAX_TOTAL_BYTES {
            return Err(format!(
                "{written}/{dir}: the skill's files hold {total} bytes; at most {} (16 MiB)",
                rules::MAX_TOTAL_BYTES
            ));
        }
    }
    let file_items = files.iter().map(|f| {
        let rel = &f.rel;
        let abs = f.abs.to_string_lossy().into_owned();
        let d = digest(&f.bytes);
        quote!(::sake::skills::EmbeddedFile {
            path: #rel,
            bytes: ::core::include_bytes!(#abs),
            digest: #d,
        })
    });
    let skill_items = skills
        .iter()
        .map(|(path, fm)| quote!(::sake::skills::EmbeddedSkill { path: #path, frontmatter: #fm }));
    let scopes = &input.scopes;
    Ok(quote! {
        const _: () = {
            static __SAKE_SKILL_FILES: &[::sake::skills::EmbeddedFile] = &[#(#file_items),*];
            static __SAKE_SKILLS: &[::sake::skills::EmbeddedSkill] = &[#(#skill_items),*];
            ::sake::__private::inventory::submit! {
                ::sake::skills::EmbeddedSkills {
                    dir: #written,
                    files: __SAKE_SKILL_FILES,
                    skills: __SAKE_SKILLS,
                    scopes: &[#(#scopes),*],
                    location: ::sake::__private::Location {
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
        Err(message) => syn::Error::new(input.dir.span(), message).to_compile_error(),
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
        let mut out = Vec::new();
        walk(&root, &root, &mut out).unwrap();
        assert_eq!(out.len(), 2);
        // Out of the directory, or to a directory: refused, naming the link.
        std::os::unix::fs::symlink(base.join("secret"), root.join("a/leak.txt")).unwrap();
        let err = walk(&root, &root, &mut Vec::new()).unwrap_err();
        let secret = std::fs::canonicalize(base.join("secret")).unwrap();
        assert_eq!(
            err,
            format!(
                "a/leak.txt: a symbolic link to {}, which is not a file inside the skills directory; copy the file in instead",
                secret.display()
            )
        );
        std::fs::remove_file(root.join("a/leak.txt")).unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("a/loop")).unwrap();
        let err = walk(&root, &root, &mut Vec::new()).unwrap_err();
        assert!(err.starts_with("a/loop: a symbolic link to "), "{err}");
        let _ = std::fs::remove_dir_all(&base);
    }
}
