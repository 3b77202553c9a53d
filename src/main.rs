fn main() {
    let universe = mpi::initialize().unwrap();
    let _ = universe;
}
