"""Progress on several machines, through a folder that a sync tool keeps in step.

The review log is the truth. Every review has a globally unique id (the device that made it
and a sequence number) and is never deleted: an undo is a tombstone (``review_graves``). A
card's state is the FSRS replay of its surviving reviews in (time, device id, sequence)
order, each with the scheduler parameters it was made with. Marks and study settings are
last-writer-wins registers stamped (time, device id, sequence). Demo runs are a union.

- local.py: this installation's device, stamps and sequence numbers (used by the store as
  it writes a rating, an undo, a mark, settings or a demo run);
- journal.py: the journal files (format, atomic writing, strict reading); stale.py: the
  writer's temporary files a killed sync left (only its own removed);
- folders.py: the devices' folders of a sync folder (a link followed; this device's own a
  link only to a folder of its own), whether a new database has anything to apply, status;
- merge.py: applying another device's entries, and the replay;
- imported.py: `prep import` of an export whose history diverged, merged by the same rules;
- replaced.py: one review id with two contents, one review under two ids (a sync tool that
  replaced a journal file by another copy's version of it);
- fork.py: a copy of this database found (it shares the device id): a new id;
- stuck.py: a file of this device's own folder that stays unreadable, set aside;
- applied.py: the other devices' files applied, noted one by one: one put in place since
  (another copy's version of it, an older file too) is read again; one that stays
  unreadable is set aside;
- relay.py: the marks and settings another device made that an import took in, passed on
  by this device's next sync with their own clocks;
- run.py: `prep sync` (write this device's new entries, apply everyone else's) and its status.
"""
