//! Finds PETSc (PETSC_DIR/PETSC_ARCH, else pkg-config `PETSc`) and MPI, and
//! generates the PETSc FFI with bindgen. MPI types come from rsmpi (mpi-sys)
//! so that a communicator crosses from rsmpi to PETSc without casts.
use std::env;
use std::path::PathBuf;
use std::process::Command;

struct Found {
    include: Vec<PathBuf>,
    link_dirs: Vec<PathBuf>,
    libs: Vec<String>,
}

fn petsc() -> Found {
    if let Ok(dir) = env::var("PETSC_DIR") {
        let dir = PathBuf::from(dir);
        let arch = env::var("PETSC_ARCH").unwrap_or_default();
        let arch_dir = if arch.is_empty() { dir.clone() } else { dir.join(&arch) };
        // Prefer the PETSc.pc of that installation: it knows the library name.
        let pc = arch_dir.join("lib/pkgconfig");
        if pc.join("PETSc.pc").exists() || pc.join("petsc.pc").exists() {
            let old = env::var("PKG_CONFIG_PATH").unwrap_or_default();
            env::set_var("PKG_CONFIG_PATH", format!("{}:{}", pc.display(), old));
        } else {
            return Found {
                include: vec![dir.join("include"), arch_dir.join("include")],
                link_dirs: vec![arch_dir.join("lib")],
                libs: vec!["petsc".into()],
            };
        }
    }
    for name in ["PETSc", "petsc"] {
        if let Ok(lib) = pkg_config::Config::new().cargo_metadata(false).probe(name) {
            return Found { include: lib.include_paths, link_dirs: lib.link_paths, libs: lib.libs };
        }
    }
    panic!(
        "stiffgrain: PETSc not found. Set PETSC_DIR (and PETSC_ARCH), or make `pkg-config PETSc` work \
         (Debian: apt-get install libpetsc-real-dev; clusters: module load petsc). Run scripts/setup."
    );
}

fn mpi_includes() -> Vec<PathBuf> {
    for name in ["ompi-c", "mpich", "mpi"] {
        if let Ok(lib) = pkg_config::Config::new().cargo_metadata(false).probe(name) {
            return lib.include_paths;
        }
    }
    // Cray and vendor MPIs: ask the compiler wrapper.
    for args in [&["--showme:incdirs"][..], &["-show"][..]] {
        if let Ok(out) = Command::new("mpicc").args(args).output() {
            let s = String::from_utf8_lossy(&out.stdout);
            let dirs: Vec<PathBuf> = s
                .split_whitespace()
                .filter_map(|t| t.strip_prefix("-I").map(PathBuf::from).or_else(|| {
                    (!t.starts_with('-') && PathBuf::from(t).is_dir()).then(|| PathBuf::from(t))
                }))
                .collect();
            if !dirs.is_empty() {
                return dirs;
            }
        }
    }
    Vec::new()
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/petsc/wrapper.h");
    println!("cargo:rerun-if-env-changed=PETSC_DIR");
    println!("cargo:rerun-if-env-changed=PETSC_ARCH");

    let p = petsc();
    for d in &p.link_dirs {
        println!("cargo:rustc-link-search=native={}", d.display());
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", d.display());
    }
    for l in &p.libs {
        println!("cargo:rustc-link-lib={l}");
    }

    let mut b = bindgen::Builder::default()
        .header("src/petsc/wrapper.h")
        .allowlist_function("(Petsc|Vec|Mat|KSP|PC|SNES|SNESLineSearch|Tao|ISLocalToGlobalMapping)[A-Za-z0-9_]*")
        .allowlist_var("PETSC_[A-Z_]+")
        .allowlist_type("(Petsc|Vec|Mat|KSP|PC|SNES|Tao|InsertMode|NormType|ScatterMode)[A-Za-z0-9_]*")
        // MPI types come from mpi-sys so rsmpi communicators pass straight in.
        .blocklist_type("MPI_.*|ompi_.*|_?MPI.*")
        .raw_line("#[allow(unused_imports)] use mpi::ffi::*;")
        .default_enum_style(bindgen::EnumVariation::Rust { non_exhaustive: false })
        .layout_tests(false)
        .generate_comments(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
    for d in p.include.iter().chain(mpi_includes().iter()) {
        b = b.clang_arg(format!("-I{}", d.display()));
    }
    let bindings = b.generate().expect("stiffgrain: bindgen failed on petsc.h (is libclang-dev installed?)");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("petsc_bindings.rs");
    bindings.write_to_file(out).expect("write petsc bindings");
}
