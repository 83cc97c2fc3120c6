"""Attribution of preempt-off / irq-off windows to classes a kernel
developer recognises.  A window is described by its caller symbol (the
function that disabled preemption/irqs) and its parent symbol (the caller's
caller, typically the lock user).  Rules are tried top to bottom; the first
rule whose pattern matches the caller or the parent wins.  Unknown -> other.
"""
import re

# PTE-lock users that hold the lock themselves once the ones above are
# inlined into them (6.1 x86-64: do_anonymous_page and handle_pte_fault into
# __handle_mm_fault, change_pte_range into change_protection_range,
# move_ptes into move_page_tables, follow_page_pte into follow_p4d_mask),
# and the other users guest/modules/mmlat_windows probes.
_PTE_OTHER_INLINED = (r"__handle_mm_fault|finish_mkwrite_fault|do_swap_page|do_numa_page|"
                      r"change_protection_range|change_protection|move_page_tables|"
                      r"try_to_migrate_one|mlock_pte_range|mincore_pte_range|walk_pgd_range|"
                      r"__get_locked_pte|follow_pte|follow_page_pte|follow_p4d_mask|"
                      r"unuse_pte_range|smaps_pte_range|clear_refs_pte_range|insert_pfn|"
                      r"remap_pte_range|remap_pfn_range_notrack|vm_insert_pages?|"
                      r"__apply_to_page_range|apply_to_pte_range|folio_referenced_one|"
                      r"page_mapped_in_vma|swapin_walk_pmd_entry|follow_pfn|follow_phys|"
                      r"generic_access_phys")

# (class, which symbol(s) to test, regex, kind restriction or None)
# which: "caller", "parent" or "either"; kind: "preemptoff", "irqsoff" or None
RULES = [
    ("calibration",   "either", r"^mmlat_calib",                          None),
    ("pte-lock-zap",  "either", r"^(zap_pte_range|zap_pmd_range|zap_huge_pmd|unmap_page_range)$", None),
    ("pte-lock-fork", "either", r"^(copy_pte_range|copy_pmd_range|copy_page_range|copy_huge_pmd)$", None),
    ("pte-lock-other", "either", r"^(__pte_offset_map_lock|pte_offset_map_lock|do_anonymous_page|handle_pte_fault|do_wp_page|wp_page_copy|change_pte_range|move_ptes|page_vma_mapped_walk|try_to_unmap_one|madvise_\w+_pte_range|__split_huge_pmd|finish_fault|filemap_map_pages|do_set_pte|" + _PTE_OTHER_INLINED + r")$", None),
    ("i_mmap-lock",   "either", r"^(i_mmap_lock_\w+|i_mmap_unlock_\w+|unmap_mapping_range|unmap_mapping_range_tree|vma_interval_tree_\w+|__vma_link_file|unlink_file_vma)$", None),
    ("anon_vma-lock", "either", r"^(anon_vma_\w+|unlink_anon_vmas|__anon_vma_prepare|lock_anon_vma_root|page_lock_anon_vma_read|folio_lock_anon_vma_read)$", None),
    ("tlb-flush-ipi", "either", r"^(flush_tlb_\w+|native_flush_tlb_\w+|smp_call_function\w*|on_each_cpu\w*|generic_smp_call_function\w*|__flush_smp_call_function_queue|csd_\w+|flush_smp_call_function\w*)$", None),
    ("mmu-gather-free", "either", r"^(_*tlb_\w+|release_pages|free_pages_and_swap_cache|free_unref_page_list|free_unref_page\w*|free_pcppages_bulk|free_pgtables|free_pgd_range|__tlb_remove_page_size|tlb_flush_mmu\w*)$", "preemptoff"),
    ("zone-lru-lock", "either", r"^(lru_add_drain\w*|\w*lruvec\w*|folio_batch_move_lru|pagevec_lru_move_fn|__pagevec_lru_add|release_pages|free_pcppages_bulk|free_one_page|rmqueue\w*|__rmqueue\w*|get_page_from_freelist|free_unref_page\w*|drain_pages\w*|isolate_lru_\w+)$", None),
    ("mmu-gather-free", "either", r"^(_*tlb_\w+|free_pages_and_swap_cache|free_pgtables|__tlb_remove_page_size)$", None),
    ("softirq",       "either", r"^(__do_softirq|do_softirq\w*|irq_exit\w*|__irq_exit_rcu|run_ksoftirqd|__local_bh_enable_ip|local_bh_enable|invoke_softirq|net_rx_action|run_timer_softirq|rcu_core\w*)$", None),
]

_COMPILED = [(c, w, re.compile(p), k) for c, w, p, k in RULES]

CLASSES = ["pte-lock-zap", "pte-lock-fork", "pte-lock-other", "i_mmap-lock",
           "anon_vma-lock", "mmu-gather-free", "tlb-flush-ipi",
           "zone-lru-lock", "softirq", "calibration", "other"]


def _strip(sym):
    if not sym:
        return ""
    s = sym.split("+", 1)[0].strip()
    s = re.sub(r"\.(isra|constprop|part|cold)\.?\d*.*$", "", s)
    return s


def classify(caller, parent=None, kind=None):
    """Return the class of one window.  Caller is tested before parent for
    each rule, but a rule higher in RULES beats a lower one."""
    c, p = _strip(caller), _strip(parent)
    for cls, which, rx, k in _COMPILED:
        if k is not None and kind is not None and k != kind:
            continue
        cands = {"caller": [c], "parent": [p], "either": [c, p]}[which]
        for s in cands:
            if s and rx.match(s):
                return cls
    return "other"
