//! Body sources expanded at start-up (`[[generate]]`): lattice, pyramid,
//! random pack and files. Each is indexable by region, so a rank computes
//! only the bodies of its own box and every rank count gets the same bodies
//! with the same ids (see `crate::startup` for the parallel side).
//!
//! Files: this one holds the data model ([`Source`]); [`lattice`] the
//! lattice, checked lattice and pyramid by region; [`random`] the random pack.
mod lattice;
mod random;

pub use lattice::{checked_lattice_in, lattice_in, orientation_draw, pyramid_in, Blocked, Oriented, MAX_ORIENTATION_DRAWS};
pub use random::{fill_cell, CellGrid, Packing, Placed};

use crate::scene::generate::SplitMix64;
use nalgebra::Vector3;
use std::path::PathBuf;

/// Salt of the stream that draws a lattice body's radius class.
const RADIUS_SALT: u64 = 0x7261_6469_7573_0001;

/// The radius distribution of a generator: sphere shape `shape[c]` of radius
/// `radius[c]` with probability `cumulative[c] - cumulative[c - 1]`.
#[derive(Clone, Debug, PartialEq)]
pub struct RadiusClasses {
    pub shape: Vec<u32>,
    pub radius: Vec<f64>,
    pub cumulative: Vec<f64>,
}

impl RadiusClasses {
    /// Every body the same shape (of bounding radius `radius`).
    pub fn single(shape: u32, radius: f64) -> Self {
        Self { shape: vec![shape], radius: vec![radius], cumulative: vec![1.0] }
    }

    pub fn max(&self) -> f64 {
        self.radius.iter().copied().fold(0.0, f64::max)
    }

    /// The class of a uniform draw `u` in [0, 1).
    pub fn pick(&self, u: f64) -> usize {
        self.cumulative.iter().position(|&c| u < c).unwrap_or(self.cumulative.len() - 1)
    }

    /// Mean of r³ (volume per body over 4π/3).
    pub fn mean_r3(&self) -> f64 {
        let mut prev = 0.0;
        let mut m = 0.0;
        for (r, c) in self.radius.iter().zip(&self.cumulative) {
            m += (c - prev) * r.powi(3);
            prev = *c;
        }
        m
    }
}

/// Body file formats of `[[generate]] kind = "file"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileFormat {
    /// A frame of a stiffgrain `frames.h5`.
    Frames,
    /// Comma-separated values with a header line naming the columns.
    Csv,
    /// LAMMPS data file, `Atoms # sphere` section.
    LammpsData,
    /// LAMMPS/LIGGGHTS `dump custom` of spheres (one snapshot).
    LammpsDump,
}

/// What a source places.
#[derive(Clone, Debug, PartialEq)]
pub enum SourceKind {
    /// n[0] × n[1] × n[2] centres from `origin`, `spacing` apart; index i + nx (j + ny k).
    /// `checked`: the surface gap a lattice of mesh bodies spaced closer than
    /// their bounding spheres keeps by choosing orientations
    /// ([`checked_lattice_in`]); None when the bounding spheres keep it.
    Lattice { origin: Vector3<f64>, n: [u64; 3], spacing: f64, checked: Option<f64> },
    /// Cannonball pyramid (see `generate::pyramid`).
    Pyramid { origin: Vector3<f64>, n: u32, radius: f64, gap: f64, layer_gap: f64, fix_base: bool },
    /// Random loose pack in [lo, hi]: the cell algorithm, or (`sequential`)
    /// the serial random sequential addition every rank repeats.
    Random { lo: Vector3<f64>, hi: Vector3<f64>, gap: f64, speed: f64, sequential: bool },
    /// Bodies read from a file; `frame` picks a step of a frames.h5 (default the last).
    File { path: PathBuf, format: FileFormat, frame: Option<u64> },
}

/// One `[[generate]]` entry, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    /// `generate[k]`, to name it in errors.
    pub key: String,
    pub kind: SourceKind,
    /// Global id of its first body.
    pub first_id: u64,
    /// Number of bodies (files: known once read).
    pub count: Option<u64>,
    /// Shapes (radius classes) of its bodies; files with a radius column
    /// add classes at start-up.
    pub classes: RadiusClasses,
    pub material: u32,
    /// Materials by the parity of the global id (even, odd).
    pub parity: Option<[u32; 2]>,
    pub velocity: Vector3<f64>,
    pub fixed: bool,
    pub random_orientation: bool,
    pub seed: u64,
}

impl Source {
    /// Axis-aligned box holding every bounding sphere it places (None for files).
    pub fn bounds(&self) -> Option<(Vector3<f64>, Vector3<f64>)> {
        let rmax = self.classes.max();
        match &self.kind {
            SourceKind::Lattice { origin, n, spacing, .. } => {
                let far = origin + *spacing * Vector3::new(n[0] as f64 - 1.0, n[1] as f64 - 1.0, n[2] as f64 - 1.0);
                Some((origin.add_scalar(-rmax), far.add_scalar(rmax)))
            }
            SourceKind::Pyramid { origin, n, radius, gap, layer_gap, .. } => {
                let d = 2.0 * radius + gap;
                let half = (*n as f64 - 1.0) / 2.0 * d + radius;
                let top = origin.z + 2.0 * radius + (*n as f64 - 1.0) * (d / 2f64.sqrt() + layer_gap);
                Some((Vector3::new(origin.x - half, origin.y - half, origin.z), Vector3::new(origin.x + half, origin.y + half, top)))
            }
            SourceKind::Random { lo, hi, .. } => Some((*lo, *hi)),
            SourceKind::File { .. } => None,
        }
    }

    /// Radius class of lattice body `j` (drawn from its own place in a stream).
    pub fn class_of(&self, j: u64) -> usize {
        if self.classes.radius.len() == 1 {
            0
        } else {
            self.classes.pick(SplitMix64::at(self.seed ^ RADIUS_SALT, j).uniform())
        }
    }
}
