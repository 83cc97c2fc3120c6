"""guest/classes.txt as the analysis reads it, and the classes of windows
and holds with the stacks the window module records (opener first)."""
import pytest

from mmlat import attribute
from mmlat.attribute import call_site, classify_stack, hold_class, opener

ZAP = ["_raw_spin_lock+0x1a/0x30", "zap_pte_range+0x1f3/0x500", "zap_pmd_range+0x12a/0x1f0",
       "unmap_page_range+0x2c5/0x470", "unmap_vmas+0xf4/0x180"]
GATHER_FREE = ["free_unref_page_list+0x1b4/0x690", "release_pages+0x103/0x290",
               "tlb_batch_pages_flush+0x41/0x70", "tlb_flush_mmu+0x3d/0x140"]
# truncate's page-cache release: the same freeing with no gather open
PLAIN_FREE = ["free_unref_page_list+0x1b4/0x690", "release_pages+0x103/0x290",
              "__folio_batch_release+0x1f/0x50", "truncate_inode_pages_range+0x129/0x480"]
PCP_BULK = ["_raw_spin_lock_irqsave+0x40/0x60", "free_pcppages_bulk+0x3a/0x2a0",
            "free_unref_page_commit+0xc5/0xf0", "free_unref_page_list+0x224/0x690"]
I_MMAP = ["_raw_spin_lock+0x1a/0x30", "unmap_mapping_pages+0x5b/0x110",
          "truncate_pagecache+0x2a/0x60", "do_truncate+0x80/0xd0"]
# mm->page_table_lock taken in __anon_vma_prepare: no anon_vma lock
PAGE_TABLE_LOCK = ["_raw_spin_lock+0x1a/0x30", "__anon_vma_prepare+0x6f/0x1a0",
                   "do_anonymous_page+0x3a1/0x3e0", "__handle_mm_fault+0x6a6/0xb50"]
# the kernel's stack at the end of a fork window (real, format 2 fixture)
FORK_END = ["mw_preempt_on+0x11e/0x160 [mmlat_windows]", "trace_preempt_on+0x117/0x120",
            "preempt_count_sub+0x48/0x70", "_raw_spin_unlock+0x16/0x30",
            "copy_page_range+0xc4e/0x1090", "dup_mmap+0x38d/0x570",
            "copy_process+0xc24/0x1560"]
IRQ_END = ["mw_irq_on+0x11f/0x160 [mmlat_windows]", "trace_hardirqs_on+0xa7/0x150",
           "_raw_spin_unlock_irqrestore+0x19/0x40", "free_pcppages_bulk+0x21f/0x2a0",
           "free_unref_page_commit+0xc5/0xf0", "free_unref_page_list+0x224/0x690"]


def test_classes_come_from_the_table_in_its_order():
    assert attribute.CLASSES[-1] == "other"
    for cls in ("calibration", "pte-lock-zap", "pte-lock-fork", "pte-lock-other",
                "i_mmap-lock", "anon_vma-lock", "page-cache-removal", "zone-lru-lock",
                "tlb-flush-ipi", "mmu-gather", "page-free", "softirq"):
        assert cls in attribute.CLASSES
    assert attribute.CLASSES.index("pte-lock-zap") < attribute.CLASSES.index("mmu-gather")
    assert len(set(attribute.CLASSES)) == len(attribute.CLASSES)
    assert attribute.CLASSES_PATH.name == "classes.txt"
    assert attribute.CLASSES_PATH.parent.name == "guest"


def test_table_is_parsed_with_globs_locks_and_kinds():
    rules = attribute.parse_rules(
        "# comment\n\n"
        "-      any plumbing -  _raw_spin_lock* preempt_count_add\n"
        "mine   irq opener   pte foo bar_*   # trailing comment\n")
    assert [(r.cls, r.kind, r.match, r.lock, r.functions, r.line) for r in rules] == [
        ("-", "any", "plumbing", None, ("_raw_spin_lock*", "preempt_count_add"), 3),
        ("mine", "irq", "opener", "pte", ("foo", "bar_*"), 4)]
    assert rules[1].has("bar_baz") and rules[1].has("foo") and not rules[1].has("foobar")
    assert rules[0].has("_raw_spin_lock_irqsave")


@pytest.mark.parametrize("line, why", [
    ("mine any opener -", "at least one function"),
    ("mine sometimes opener - foo", "kind 'sometimes'"),
    ("mine any first - foo", "match 'first'"),
    ("mine any opener spinlock foo", "lock 'spinlock'"),
    ("- any opener - foo", "plumbing and boundary rows, and only they"),
    ("mine any plumbing - foo", "plumbing and boundary rows, and only they"),
])
def test_a_bad_line_is_named_by_its_number(line, why):
    text = "# header\nok any opener - foo\n\n" + line + "\n"
    with pytest.raises(attribute.ClassesError, match=r"^t\.txt:4: .*" + why):
        attribute.parse_rules(text, "t.txt")


def test_func_name_strips_offsets_suffixes_and_module():
    assert attribute.func_name("zap_pte_range+0x1f3/0x500") == "zap_pte_range"
    assert attribute.func_name("follow_p4d_mask.constprop.0+0x12/0x90") == "follow_p4d_mask"
    assert attribute.func_name("move_page_tables.part.0+0x1/0x2") == "move_page_tables"
    assert attribute.func_name("mw_irq_on+0x11f/0x160 [mmlat_windows]") == "mw_irq_on"
    assert attribute.func_name("[idle]") == "[idle]"


def test_opener_skips_lock_preempt_and_tracing_plumbing():
    assert opener(ZAP) == "zap_pte_range"
    assert opener(GATHER_FREE) == "free_unref_page_list"
    assert opener(FORK_END) == "copy_page_range"
    assert opener(IRQ_END) == "free_pcppages_bulk"
    assert opener(["_raw_spin_lock+0x1/0x2"]) == ""
    assert call_site(GATHER_FREE) == "free_unref_page_list <- release_pages"
    assert call_site(ZAP) == "zap_pte_range <- zap_pmd_range"
    assert call_site(["[idle]"]) == "[idle]"
    assert call_site([]) == "[none]"


def test_classify_real_openers():
    assert classify_stack(ZAP, "preempt", "pte") == "pte-lock-zap"
    assert classify_stack(FORK_END[3:], "preempt", "pte") == "pte-lock-fork"
    # page freeing inside a gather is the gather's; outside one, page-free
    assert classify_stack(GATHER_FREE, "preempt", "none") == "mmu-gather"
    assert classify_stack(PLAIN_FREE, "preempt", "none") == "page-free"
    # the same freeing with irqs off is the zone lock
    assert classify_stack(PCP_BULK, "irq", "none") == "zone-lru-lock"
    assert classify_stack(PCP_BULK, "irqsoff", "none") == "zone-lru-lock"
    assert classify_stack(I_MMAP, "preempt", "i_mmap") == "i_mmap-lock"
    assert classify_stack(["[idle]"], "preempt", "none") == "idle"
    assert classify_stack(["__do_softirq+0x5/0x300", "irq_exit_rcu+0x9/0x40"],
                          "irq", "none") == "softirq"
    assert classify_stack(["mmlat_calib_preempt_window+0x2a/0x60",
                           "mmlat_calib_write+0x8c/0x140"], "preempt", "none") == "calibration"
    assert classify_stack(["some_driver_poll+0x1c/0x80"], "preempt", "none") == "other"
    assert classify_stack([], "preempt", "none") == "other"


def test_the_lock_tag_decides_before_the_stack():
    # tagged i_mmap or anon_vma: the lock alone, whatever took it
    assert classify_stack(ZAP, "preempt", "anon_vma") == "anon_vma-lock"
    # tagged pte: split by the opener; an unlisted one is pte-lock-other
    assert classify_stack(["_raw_spin_lock+0x1/0x2", "new_pte_user+0x1/0x2"],
                          "preempt", "pte") == "pte-lock-other"
    # untagged by a module that tags: none of the hooked locks, so no
    # lock user's row applies
    assert classify_stack(PAGE_TABLE_LOCK, "preempt", "none") == "other"
    assert classify_stack(I_MMAP, "preempt", "none") == "other"
    # no tag known (a stack at a window's end): the stack alone
    assert classify_stack(PAGE_TABLE_LOCK, "preempt") == "anon_vma-lock"
    assert classify_stack(FORK_END, "preempt") == "pte-lock-fork"
    assert classify_stack(IRQ_END, "irq") == "zone-lru-lock"


def test_an_injected_lock_hold_is_calibration_at_open_and_at_its_end():
    # The calibration module's 3 ms PTE-lock hold: tagged pte at open, no
    # tag on the kernel's stack at its end; both must say calibration, or
    # the traced boot's max window and its end stack disagree.
    hold = ["_raw_spin_lock+0x1a/0x30", "mmlat_calib_ptl_hold+0x40/0x90",
            "mmlat_calib_write+0x8c/0x140", "vfs_write+0xc5/0x3a0"]
    end = ["_raw_spin_unlock+0x1a/0x30"] + hold[1:]
    assert classify_stack(hold, "preempt", "pte") == "calibration"
    assert classify_stack(end, "preempt") == "calibration"
    assert hold_class("pte", "mmlat_calib_ptl_hold") == "pte-lock-other"


def test_hold_class():
    assert hold_class("pte", "unmap_page_range") == "pte-lock-zap"
    assert hold_class("pte", "zap_pte_range") == "pte-lock-zap"
    assert hold_class("pte", "copy_page_range") == "pte-lock-fork"
    assert hold_class("pte", "__handle_mm_fault") == "pte-lock-other"
    assert hold_class("pte", "follow_p4d_mask.constprop.0") == "pte-lock-other"
    assert hold_class("pte", "mmlat_calib_ptl_hold") == "pte-lock-other"
    assert hold_class("i_mmap", "unmap_mapping_pages") == "i_mmap-lock"
    assert hold_class("i_mmap", "anything") == "i_mmap-lock"
    assert hold_class("anon_vma", "anon_vma_clone") == "anon_vma-lock"


def test_every_lock_user_row_names_its_lock():
    # the module hooks the lock calls of these rows' functions: every
    # PTE, i_mmap and anon_vma class row carries its lock
    for r in attribute.RULES:
        if r.cls.startswith("pte-lock-"):
            assert r.lock == "pte", r
        if r.cls in ("i_mmap-lock", "anon_vma-lock"):
            assert r.lock == r.cls[:-len("-lock")], r


def test_a_softirq_run_at_irq_exit_is_not_the_window_it_interrupted():
    # The exit boot's longest window (2.27 ms, cross1 r5): softirqs run at
    # the exit of a timer interrupt taken in the gather's page freeing. At
    # open the stack is the softirq's; at the end the kernel's stack goes
    # on below the interrupt into the gather, whose within row came first.
    end = ["_raw_spin_unlock_irqrestore+0x2/0x40", "handle_softirqs+0x1a0/0x2c0",
           "irq_exit_rcu+0x8a/0xb0", "sysvec_apic_timer_interrupt+0x70/0x90",
           "asm_sysvec_apic_timer_interrupt+0x16/0x20", "free_unref_page_list+0x1e5/0x3a0",
           "release_pages+0x173/0x4a0", "tlb_batch_pages_flush+0x3d/0x70",
           "tlb_finish_mmu+0x61/0xe0"]
    assert classify_stack(["handle_softirqs+0x5/0x2c0"], "preempt", "none") == "softirq"
    assert classify_stack(end, "preempt") == "softirq"
    # without the interrupt, the same freeing is the gather's
    assert classify_stack(end[5:], "preempt") == "mmu-gather"


# Linux 7.3 (results of a TREE=7.3 run, munmap and imap boots): the PTE
# lock is taken in the out-of-line pte_offset_map_lock() for
# __zap_vma_range(), unmap_page_range()'s 7.3 name; 6.12 takes it in
# __pte_offset_map_lock().
ZAP_73_OPEN = ["_raw_spin_lock+0x17/0x40", "pte_offset_map_lock+0x5e/0xd0",
               "__zap_vma_range+0x3b0/0x13c0", "unmap_vmas+0x5b/0x80",
               "unmap_region+0x8b/0xd0", "vms_complete_munmap_vmas+0xdd/0x210"]
ZAP_73_END = ["mw_preempt_on+0x161/0x1a0 [mmlat_windows]", "trace_preempt_on+0x63/0x70",
              "preempt_count_sub+0x45/0x70", "_raw_spin_unlock+0x16/0x30",
              "__zap_vma_range+0xfaf/0x13c0", "unmap_mapping_range_tree+0x113/0x150",
              "unmap_mapping_pages+0x89/0x90", "unmap_mapping_range+0x25/0x30"]
FORK_73_OPEN = ["_raw_spin_lock+0x17/0x40", "pte_offset_map_lock+0x5e/0xd0",
                "copy_page_range+0x5c4/0x1570", "dup_mmap+0x3d6/0x870",
                "copy_process+0x12a7/0x1f30", "kernel_clone+0xcb/0x400"]


def test_the_7_3_zap_and_fork_paths_through_pte_offset_map_lock():
    assert opener(ZAP_73_OPEN) == "__zap_vma_range"
    assert call_site(ZAP_73_OPEN) == "__zap_vma_range <- unmap_vmas"
    assert classify_stack(ZAP_73_OPEN, "preempt", "pte") == "pte-lock-zap"
    assert classify_stack(ZAP_73_END, "preempt") == "pte-lock-zap"
    assert classify_stack(FORK_73_OPEN, "preempt", "pte") == "pte-lock-fork"
    # the module counts these holds at the helper's caller
    assert hold_class("pte", "__zap_vma_range") == "pte-lock-zap"
    assert hold_class("pte", "copy_page_range") == "pte-lock-fork"
    # 6.12's helper has the other name; a hold left at a helper is the
    # PTE lock's still
    six12 = ["_raw_spin_lock+0x17/0x40", "__pte_offset_map_lock+0x5e/0xd0",
             "unmap_page_range+0x3b0/0x13c0", "unmap_vmas+0x5b/0x80"]
    assert classify_stack(six12, "preempt", "pte") == "pte-lock-zap"
    assert hold_class("pte", "pte_offset_map_lock") == "pte-lock-other"
    assert hold_class("pte", "__pte_offset_map_lock") == "pte-lock-other"


def test_copy_process_takes_i_mmap_in_6_12_but_its_windows_stay_fork_exit():
    # dup_mmap() is inlined into 6.12's copy_process(): a lock user, listed
    # after fork-exit, so that its own windows (tasklist_lock) stay fork-exit
    tasklist = ["_raw_write_lock_irq+0x1a/0x30", "copy_process+0xc24/0x1560",
                "kernel_clone+0xcb/0x400"]
    assert classify_stack(tasklist, "irq", "none") == "fork-exit"
    assert classify_stack(tasklist, "irq") == "fork-exit"
    assert hold_class("i_mmap", "copy_process") == "i_mmap-lock"
    assert any(r.lock == "i_mmap" and r.has("copy_process") for r in attribute.RULES)
