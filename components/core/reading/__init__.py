"""Reading: QA span decoding, the offline sentence reader, typed short answers, citations of generated text."""
