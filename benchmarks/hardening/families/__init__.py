"""The probe's families, one module each: ``FAMILY`` (its number), ``WHAT`` (one line), ``SHARED`` (True: it runs
on the shared server, ``run(probe, server)``; False: it starts its own servers or processes, ``run(probe)``).

A new family is a module here with those four names, listed in ``SHARED_ORDER`` or ``OWN_ORDER``."""

from __future__ import annotations

from . import (
               api_key_scope,
               batch_runs,
               bodies,
               book_faults,
               book_links,
               book_reuse,
               books,
               busy_launch,
               cancel_benchmark,
               control_tokens,
               disk,
               echoes,
               growing_headers,
               key_default_scope,
               kill_during_writes,
               large_body,
               late_checks,
               long_transcripts,
               malformed_inputs,
               memory,
               other_visitors,
               outputs_folder,
               rebuilt_backbone,
               store_rows,
               store_secrets,
               store_stalled,
               strangers,
               truncated_model,
               unreadable_voices,
               voice_names,
               word_timings,
               work_before_queue,
               wyoming,
)

#: the shared server's families, in an order that keeps them apart (the memory and cancel families last)
SHARED_ORDER = [malformed_inputs, large_body, disk, other_visitors, voice_names, outputs_folder, echoes,
                control_tokens, work_before_queue, growing_headers, late_checks, long_transcripts, bodies, memory,
                cancel_benchmark]
#: the families with servers or processes of their own, after the shared server has stopped
OWN_ORDER = [kill_during_writes, truncated_model, batch_runs, rebuilt_backbone, unreadable_voices, wyoming,
             api_key_scope, busy_launch, key_default_scope, word_timings, strangers, books, book_faults,
             store_stalled, store_secrets, store_rows, book_links, book_reuse]

MODULES = {module.FAMILY: module for module in sorted(SHARED_ORDER + OWN_ORDER, key=lambda module: module.FAMILY)}
#: family number -> what it probes
FAMILIES = {number: module.WHAT for number, module in MODULES.items()}

assert all(module.SHARED for module in SHARED_ORDER) and not any(module.SHARED for module in OWN_ORDER)
assert len(MODULES) == len(SHARED_ORDER) + len(OWN_ORDER), "two families share a number"
