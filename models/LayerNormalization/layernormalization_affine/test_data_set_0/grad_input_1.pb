B
grad_scaleJ ÅúZ¤)Ì¿ã©N‹MÀ¨¬ÇCä?ýý@?	xñ?