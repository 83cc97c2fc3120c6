from mmlat.attribute import classify


def test_classes():
    assert classify("_raw_spin_lock", "zap_pte_range") == "pte-lock-zap"
    assert classify("copy_pte_range", "copy_pmd_range") == "pte-lock-fork"
    assert classify("mmlat_calib_preempt", "x") == "calibration"
    assert classify("__do_softirq", "irq_exit_rcu") == "softirq"
    assert classify("smp_call_function_many_cond", "on_each_cpu_cond_mask") == "tlb-flush-ipi"
    assert classify("_raw_spin_lock_irqsave", "folio_lruvec_lock_irqsave", "irqsoff") == "zone-lru-lock"
    assert classify("tlb_finish_mmu", "exit_mmap", "preemptoff") == "mmu-gather-free"
    # the pre-series baseline opens its non-preemptible gather here
    assert classify("__tlb_gather_mmu+0x98/0x120", "__tlb_gather_mmu+0x98/0x120",
                    "preemptoff") == "mmu-gather-free"
    assert classify("unmap_mapping_range", "x") == "i_mmap-lock"
    assert classify("unlink_anon_vmas", "x") == "anon_vma-lock"
    assert classify("foo", "bar") == "other"
    assert classify(None, None) == "other"
