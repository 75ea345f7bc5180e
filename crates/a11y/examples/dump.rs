//! Probe: dump the tree of a window by pid and title.
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let mut r = voxdesk_a11y::Reader::open(voxdesk_a11y::Limits::default()).unwrap();
    for app in r.apps().unwrap() { println!("app {:?}", app); }
    let w = voxdesk_a11y::Window { pid: a.get(1).and_then(|p| p.parse().ok()), title: a.get(2).cloned().unwrap_or_default(), rect: None };
    for i in 0..3 {
        let t0 = std::time::Instant::now();
        let t = r.tree(&w).unwrap();
        let el = t0.elapsed();
        if let Some(t) = &t {
            if i == 0 { for n in &t.nodes { println!("{:<16} {:?} {:?} {:?} {:?}", n.role.name(), n.name, n.states.words(n.role), n.value.as_deref().map(|v| v.chars().take(40).collect::<String>()), n.rect); }
            println!("dialogs {:?}", t.dialogs); }
            println!("nodes {} partial {} walked {} read {:.1} ms ({:?})", t.nodes.len(), t.partial, t.walked, t.read_ms, el);
        } else { println!("none"); }
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}
