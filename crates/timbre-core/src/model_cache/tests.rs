use super::*;

fn key(kind: ModelKind, identity: &str) -> ModelKey {
    ModelKey {
        kind,
        identity: identity.to_string(),
        device: "Cpu".to_string(),
        precision: "fp32".to_string(),
    }
}

/// Loads a model that is its own name, counting loads.
fn load(cache: &ModelCache, id: &str, bytes: u64, loads: &mut u32) -> (String, CacheUse) {
    let (model, used) = cache
        .get_or_load(key(ModelKind::Voice, id), id, || {
            *loads += 1;
            Ok((id.to_string(), bytes))
        })
        .unwrap();
    let name = model.lock().clone();
    (name, used)
}

#[test]
fn a_second_lookup_is_a_hit_and_loads_nothing() {
    let cache = ModelCache::new(1000);
    let mut loads = 0;
    assert_eq!(
        load(&cache, "a", 10, &mut loads),
        ("a".into(), CacheUse::Computed)
    );
    assert_eq!(
        load(&cache, "a", 10, &mut loads),
        ("a".into(), CacheUse::Memory)
    );
    assert_eq!(loads, 1);
    let report = cache.report();
    assert_eq!((report.hits, report.misses, report.evictions), (1, 1, 0));
    assert_eq!(report.used_bytes, 10);
    assert_eq!(report.models.len(), 1);
    assert_eq!(report.models[0].hits, 1);
}

#[test]
fn kinds_devices_and_precisions_are_separate_entries() {
    let cache = ModelCache::new(1000);
    let mut keys = vec![key(ModelKind::Hubert, "x"), key(ModelKind::Rmvpe, "x")];
    keys.push(ModelKey {
        device: "Cuda(0)".into(),
        ..key(ModelKind::Hubert, "x")
    });
    keys.push(ModelKey {
        precision: "fp16".into(),
        ..key(ModelKind::Hubert, "x")
    });
    for key in keys {
        let (_, used) = cache.get_or_load(key, "x", || Ok((0u8, 1))).unwrap();
        assert_eq!(used, CacheUse::Computed);
    }
    assert_eq!(cache.report().models.len(), 4);
}

#[test]
fn the_least_recently_used_model_leaves_first_when_over_budget() {
    let cache = ModelCache::new(25);
    let mut loads = 0;
    load(&cache, "a", 10, &mut loads);
    load(&cache, "b", 10, &mut loads);
    load(&cache, "a", 10, &mut loads);
    load(&cache, "c", 10, &mut loads);
    let names: Vec<String> = cache.report().models.into_iter().map(|m| m.name).collect();
    assert_eq!(names, ["c", "a"]);
    assert_eq!(cache.report().evictions, 1);
    assert_eq!(load(&cache, "b", 10, &mut loads).1, CacheUse::Computed);
}

#[test]
fn a_model_over_the_whole_budget_stays_until_the_next_one() {
    let cache = ModelCache::new(5);
    let mut loads = 0;
    load(&cache, "big", 50, &mut loads);
    assert_eq!(cache.report().models.len(), 1);
    load(&cache, "next", 1, &mut loads);
    let names: Vec<String> = cache.report().models.into_iter().map(|m| m.name).collect();
    assert_eq!(names, ["next"]);
}

#[test]
fn a_smaller_budget_evicts_at_once() {
    let cache = ModelCache::new(100 << 20);
    let mut loads = 0;
    for id in ["a", "b", "c"] {
        load(&cache, id, 1 << 20, &mut loads);
    }
    cache.set_budget_mb(2);
    assert_eq!(cache.report().models.len(), 2);
    assert_eq!(cache.report().budget_bytes, 2 << 20);
}

#[test]
fn an_evicted_model_lives_on_with_the_job_holding_it() {
    let cache = ModelCache::new(10);
    let (held, _) = cache
        .get_or_load(key(ModelKind::Voice, "a"), "a", || {
            Ok((vec![1.0f32; 4], 10))
        })
        .unwrap();
    assert!(cache.report().models[0].in_use);
    cache.clear();
    assert!(cache.report().models.is_empty());
    assert_eq!(held.lock().len(), 4);
}

#[test]
fn a_failed_load_leaves_nothing_behind() {
    let cache = ModelCache::new(10);
    let failed = cache.get_or_load::<u8>(key(ModelKind::Hubert, "a"), "a", || {
        anyhow::bail!("hubert_base.pt: not a torch file")
    });
    assert!(format!("{:#}", failed.err().unwrap()).contains("hubert_base.pt"));
    let report = cache.report();
    assert!(report.models.is_empty());
    assert_eq!(report.misses, 1);
}

#[test]
fn asking_for_another_type_under_a_key_is_an_error_not_a_panic() {
    let cache = ModelCache::new(10);
    cache
        .get_or_load(key(ModelKind::Voice, "a"), "a", || Ok((1u8, 1)))
        .unwrap();
    let wrong = cache.get_or_load::<String>(key(ModelKind::Voice, "a"), "a", || unreachable!());
    assert!(wrong.is_err());
}
