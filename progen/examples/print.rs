fn main() {
    let s: u64 = std::env::args().nth(1).unwrap().parse().unwrap();
    print!("{}", progen::generate(s));
}
